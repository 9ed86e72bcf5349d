# METADATA
# title: API enumeration
# description: >-
#   One client paging through an API endpoint: the distinct query strings
#   with a paging argument (page, offset, cursor, start, skip, p) per
#   (ip.src, http.norm.path). The crawl rules leave API calls out, since a
#   single-page app makes hundreds of them; but an app asks for the next
#   pages of a list a screen at a time, a few dozen at most, while a scraper
#   walks the whole catalogue: /api/products?page=1 ... ?page=800. The
#   endpoint is slowed for that client only.
# custom:
#   characteristics: [ip.src, http.norm.path]
#   distinct: http.query
#   windows:
#     - period: 10m
#       requests_per_period: 90
#     - period: 1h
#       requests_per_period: 290
#   action: rate_limit
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.api_enumeration

paging := {"page", "offset", "cursor", "start", "skip", "p", "page[number]", "page[offset]"}

# Pages from the tenth on (a value of two characters or more): the first
# screens of a list, which every app asks for again and again, cost nothing
# to count.
count if {
	input.http.query
	input.http.method in {"GET", "HEAD"}
	some arg in paging
	v := input.http.args[arg]
	not v in first_screens
	not input.bot.verified
}

first_screens := {"", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

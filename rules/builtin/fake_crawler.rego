# METADATA
# title: Fake crawler
# description: >-
#   A user agent that names a known crawler (Googlebot, bingbot, Applebot,
#   DuckDuckBot, facebookexternalhit, YandexBot, Baiduspider, AhrefsBot ...)
#   from an address that is neither in the ranges that crawler publishes nor
#   confirmed by its reverse DNS (bot.verified absent). A name whose reverse
#   DNS lookup has not answered, or that cannot be checked without
#   characteristics.resolver, is bot.pending and not counted. Real crawlers
#   are verified and never counted; scrapers borrow their names to be let
#   through. A link preview fetched by iOS or macOS Messages is not counted
#   either: Messages fetches it from the user's own phone or Mac, with
#   Safari's user agent followed by "facebookexternalhit/1.1 Facebot
#   Twitterbot/1.0" (the crawlers whose preview markup it reads). That is a
#   device asking for one page and its image, not a search engine's crawler
#   claiming to be let through; it never comes from the crawler's ranges.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: rate_limit
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.fake_crawler

count if {
	input.bot.name
	not input.bot.verified
	not input.bot.pending
	not link_preview
}

# The Messages app's preview fetcher: the crawler tokens follow a
# browser's user agent, in this exact form.
link_preview if contains(input.http.user_agent, "facebookexternalhit/1.1 Facebot Twitterbot/1.0")

mitigate := true

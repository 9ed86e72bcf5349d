# METADATA
# title: Fake crawler
# description: >-
#   A user agent that names a major crawler (Googlebot, bingbot, Applebot,
#   DuckDuckBot, facebookexternalhit, YandexBot ...) from an address outside
#   the ranges that crawler publishes (bot.verified absent). Real crawlers are
#   verified and never counted; scrapers borrow their names to be let through.
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
}

mitigate := true

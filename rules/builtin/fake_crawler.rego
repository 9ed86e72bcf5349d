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
#   through.
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
}

mitigate := true

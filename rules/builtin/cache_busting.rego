# METADATA
# title: Cache busting
# description: >-
#   Distinct query strings per address and page: a flood that appends a
#   random query (/?8890121518) to every request so that no cache answers it
#   and every request reaches the application. A person does not ask for one
#   page with thirty different queries in a minute; API endpoints, where
#   search-as-you-type and pagination do, are not counted.
# custom:
#   characteristics: [ip.src, http.path]
#   distinct: http.query
#   period: 1m
#   requests_per_period: 30
#   action: rate_limit
#   mitigation_timeout: 10m
#   algorithm: sliding_window
package guardd.rules.cache_busting

static := {
	".css", ".js", ".mjs", ".map", ".json", ".png", ".jpg", ".jpeg", ".gif", ".webp",
	".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm",
}

api := {"/api/", "/graphql", "/_next/", "/wp-json/", "/ajax", "/xhr/", "/rest/", "/socket.io/", "/sockjs", "/search/suggest", "/autocomplete"}

count if {
	input.http.query
	input.http.method in {"GET", "HEAD"}
	not input.bot.verified
	not strings.any_suffix_match(lower(input.http.path), static)
	not strings.any_prefix_match(lower(input.http.path), api)
	not input.http.headers["x-requested-with"]
}

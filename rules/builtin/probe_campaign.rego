# METADATA
# title: One probe family from many addresses
# description: >-
#   A campaign that asks each address for one or two paths of a probe family
#   (WordPress, admin panels, secret files, backups, web shells) without any
#   user agent, and that the site answers 403, 404, 405 or 410 (it has no
#   such thing): every address stays under every per-address limit, and the
#   campaign is seen whole only per site. Counted as distinct addresses per
#   http.host; the mitigation covers the site, and its expression blocks
#   every such probe from any address, a new one on its first request, until
#   the campaign has been quiet for the timeout. No browser, crawler or
#   monitor sends a request without a user agent for /wp-admin/.
# custom:
#   characteristics: [http.host]
#   distinct: ip.src
#   period: 1h
#   requests_per_period: 1
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.probe_campaign

count if {
	bare_probe
	input.http.status in {403, 404, 405, 410}
}

# The status is not known when a request arrives: while the campaign is
# active, the probe itself is refused.
mitigate if bare_probe

bare_probe if {
	not input.http.user_agent
	guardd.signature(input.http.norm.path, "wordpress|admin_panel|sensitive_file|backup|webshell")
}

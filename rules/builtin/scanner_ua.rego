# METADATA
# title: Scanner and attack tool user agents
# description: >-
#   Requests whose User-Agent names an attack or scanning tool, counted per
#   client address. Tools that keep their default user agent announce
#   themselves; a low threshold lets one stray request pass.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 3
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.scanner_ua

# Lower-case fragments of the default user agents of attack tools. Each is
# at least six bytes long, as the tools write them ("Nikto/2.1.6",
# "Mozilla/4.0 (Hydra)"), which keeps them specific and the scan fast.
tools := {
	"sqlmap", "nikto/", "nmap scripting engine", "nmap nse", "masscan", "zgrab/",
	"nuclei", "wpscan", "dirbuster", "gobuster", "feroxbuster", "fuzz faster u fool",
	"wfuzz/", "acunetix", "netsparker", "openvas", "w3af.org", "arachni",
	"skipfish", " havij", "jaeles", "whatweb", "morfeus", "nessus", "joomscan",
	"commix", "xsstrike", "(hydra)", "medusa/", "brutus", "appscan", "webinspect",
	"paros/", "burpcollaborator", "interact.sh", "censysinspect",
}

count if {
	ua := lower(input.http.user_agent)
	some t in tools
	contains(ua, t)
}

mitigate := true

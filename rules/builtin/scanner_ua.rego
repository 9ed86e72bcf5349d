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

# Lower-case fragments of the default user agents of attack tools.
tools := {
	"sqlmap", "nikto", "nmap scripting engine", "nmap nse", "masscan", "zgrab",
	"nuclei", "wpscan", "dirbuster", "gobuster", "feroxbuster", "fuzz faster u fool",
	"ffuf", "wfuzz", "dirb/", "acunetix", "netsparker", "openvas", "w3af", "arachni",
	"skipfish", "havij", "jaeles", "whatweb", "zmeu", "morfeus", "nessus", "joomscan",
	"commix", "xsstrike", "hydra", "medusa/", "brutus", "appscan", "webinspect",
	"paros", "burpcollaborator", "interact.sh", "censysinspect",
}

count if {
	ua := lower(input.http.user_agent)
	some t in tools
	contains(ua, t)
}

mitigate := true

# METADATA
# title: Scanner and attack tool user agents
# description: >-
#   Requests whose User-Agent names an attack or scanning tool (sqlmap,
#   Nikto, Nmap NSE, masscan, zgrab, Nuclei, WPScan, ...), or a known spam
#   bot. Tools that keep their default user agent announce themselves, and
#   often send only a request or two: one is enough. General-purpose clients
#   (curl, python-requests, Go) are not named.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.scanner_ua

count if guardd.signature(input.http.norm.user_agent, "scanner_ua")

mitigate := true

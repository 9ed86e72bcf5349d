# METADATA
# title: Exploit and backdoor probes
# description: >-
#   Requests for paths that only exploits and scanners ask for: endpoints of
#   known CVEs (PHPUnit eval-stdin, Telerik, Confluence setup, PAN-OS,
#   FortiOS, F5 TMUI, Pulse Secure, Cisco ASA, ...), and, when the site
#   answers that they are not there, the file names of web shells and
#   backdoors. One request is enough.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.cve_probe

count if guardd.signature(input.http.norm.path, "cve_probe")

count if {
	input.http.status >= 400
	guardd.signature(input.http.norm.path, "webshell")
}

mitigate := true

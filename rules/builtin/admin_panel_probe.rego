# METADATA
# title: Admin panel and appliance probing
# description: >-
#   Requests for admin panels, database consoles, CGI scripts and appliance
#   logins (phpMyAdmin, Adminer, /cgi-bin/, Tomcat manager, SAP, Cisco
#   ASA, ...) that the site answers it does not have (400, 403, 404, 405 or
#   410). A site that runs phpMyAdmin answers 200 and is left alone.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.admin_panel_probe

count if {
	input.http.status in {400, 403, 404, 405, 410}
	guardd.signature(input.http.norm.path, "admin_panel")
}

mitigate := true

# METADATA
# title: Sensitive file probing
# description: >-
#   Requests for secrets anywhere in the normalised path (.env, .git/, cloud
#   and SSH credentials, .htpasswd, wp-config.php), whatever the answer; and
#   requests for leftovers (backups, dumps, editor swap files, CI files) that
#   the site answers it does not have. A site that really serves a .sql file
#   (an app fetching its migrations) answers 200 and is left alone.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.sensitive_probe

count if guardd.signature(input.http.norm.path, "sensitive_file")

count if {
	input.http.status in {400, 403, 404, 410}
	guardd.signature(input.http.norm.path, "backup")
}

mitigate := true

# METADATA
# title: Sensitive file and admin panel probing
# description: >-
#   Requests for secrets (.env, .git, cloud credentials, backups) anywhere in
#   the path, and for admin panels this site does not have (answered 404),
#   counted per client address. A handful trips it.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.sensitive_probe

# Fragments that no legitimate request has, wherever they appear in the path.
secrets := {
	"/.env", "/.git/", "/.git", "/.svn/", "/.hg/", "/.aws/", "/.ssh/", "/.docker/",
	"/.htpasswd", "/.htaccess", "/.ds_store", "/.vscode/", "/.idea/", "/.npmrc",
	"/.kube/", "/.bash_history", "/wp-config.php", "/web.config", "/id_rsa",
	"/etc/passwd", "/proc/self/", "/.well-known/security.txt~", "/phpinfo.php",
}

# Backup and editor leftovers of source and configuration files.
backups := {".bak", ".old", ".orig", ".save", ".swp", ".swo", "~", ".sql", ".sql.gz", ".sqlite", ".tar.gz.bak"}

# Admin panels and appliance endpoints; only counted when the site answers
# 404, so a real WordPress or phpMyAdmin installation is not flagged.
panels := {
	"/wp-admin", "/wp-login.php", "/xmlrpc.php", "/phpmyadmin", "/pma/", "/myadmin",
	"/mysqladmin", "/adminer", "/server-status", "/server-info", "/config.php",
	"/admin.php", "/administrator/", "/cgi-bin/", "/actuator", "/manager/html",
	"/solr/", "/jenkins", "/boaform", "/hnap1", "/vendor/phpunit", "/owa/",
}

count if {
	p := lower(input.http.path)
	some s in secrets
	contains(p, s)
}

count if strings.any_suffix_match(lower(input.http.path), backups)

count if {
	input.http.status == 404
	strings.any_prefix_match(lower(input.http.path), panels)
}

# Once tripped, everything from the address is refused.
mitigate := true

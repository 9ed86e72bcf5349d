package guardd.rules.sensitive_probe_test

import data.guardd.rules.sensitive_probe as rule

req(path, status) := {"http": {"method": "GET", "path": path, "status": status, "headers": {}, "cookies": {}}, "ip": {"src": "192.0.2.44"}}

test_counts_secrets_anywhere_whatever_the_answer if {
	every p in ["/.env", "/app/.env", "/.git/config", "/.GIT/HEAD", "/.aws/credentials", "/wp-config.php", "/.ssh/id_rsa"] {
		rule.count with input as req(p, 200)
	}
}

test_counts_backup_files if {
	every p in ["/index.php.bak", "/db.sql", "/config.php~", "/settings.py.orig", "/.main.go.swp"] {
		rule.count with input as req(p, 404)
	}
}

test_counts_missing_admin_panels if {
	every p in ["/wp-login.php", "/phpMyAdmin/index.php", "/server-status", "/cgi-bin/luci", "/actuator/env"] {
		rule.count with input as req(p, 404)
	}
}

test_ignores_admin_panels_the_site_has if {
	not rule.count with input as req("/wp-login.php", 200)
	not rule.count with input as req("/wp-admin/", 302)
}

test_ignores_ordinary_pages if {
	every p in ["/", "/products/42", "/environment", "/blog/git-tips", "/static/app.js"] {
		not rule.count with input as req(p, 200)
	}
}

test_mitigates_everything if rule.mitigate with input as req("/", 200)

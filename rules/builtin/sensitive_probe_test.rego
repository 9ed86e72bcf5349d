package guardd.rules.sensitive_probe_test

import data.guardd.rules.sensitive_probe as rule

req(path, status) := {"http": {"method": "GET", "path": path, "status": status, "norm": {"path": path}, "headers": {}, "cookies": {}}}

test_secrets_whatever_the_answer if {
	every p in ["/.env", "/app/.git/config", "/.aws/credentials", "/.htpasswd", "/wp-config.php", "/home/u/.ssh/id_rsa"] {
		rule.count with input as req(p, 200)
	}
}

test_leftovers_when_absent if {
	rule.count with input as req("/backup.sql", 404)
	rule.count with input as req("/.wp-config.php.swp", 404)
	rule.count with input as req("/.bash_history", 404)
}

test_sql_files_the_site_serves if {
	not rule.count with input as req("/data/migrations/1548957970627_remove-db-version.sql", 200)
}

test_ignores_pages if {
	not rule.count with input as req("/products/42", 200)
	not rule.count with input as req("/.well-known/acme-challenge/3Yc8fA_tok", 200)
}

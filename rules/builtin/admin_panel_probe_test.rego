package guardd.rules.admin_panel_probe_test

import data.guardd.rules.admin_panel_probe as rule

req(path, status) := {"http": {"method": "GET", "path": path, "status": status, "norm": {"path": path}, "headers": {}, "cookies": {}}}

test_counts_absent_panels if {
	rule.count with input as req("/phpMyAdmin-2.8.2.3/scripts/setup.php", 404)
	rule.count with input as req("/cgi-bin/tools/tools.pl", 400)
	rule.count with input as req("/+CSCOE+/", 404)
}

test_ignores_panels_the_site_has if not rule.count with input as req("/phpmyadmin/index.php", 200)

test_ignores_other_missing_pages if not rule.count with input as req("/some/random/path", 404)

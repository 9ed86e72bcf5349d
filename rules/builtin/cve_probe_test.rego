package guardd.rules.cve_probe_test

import data.guardd.rules.cve_probe as rule

req(path, status) := {"http": {"method": "GET", "path": path, "status": status, "norm": {"path": path}, "headers": {}, "cookies": {}}}

test_cve_paths if {
	rule.count with input as req("/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", 200)
	rule.count with input as req("/Telerik.Web.UI.WebResource.axd", 404)
	rule.count with input as req("/_ignition/execute-solution", 404)
}

test_webshell_names_when_absent if {
	rule.count with input as req("/Worse_Linux_Shell.php", 404)
	not rule.count with input as req("/products/shell.php-guide", 200)
}

test_ignores_pages if not rule.count with input as req("/blog/2024/hello", 200)

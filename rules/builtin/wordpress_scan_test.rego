package guardd.rules.wordpress_scan_test

import data.guardd.rules.wordpress_scan as rule

req(path, status) := {"http": {"method": "GET", "path": path, "status": status, "norm": {"path": path}, "headers": {}, "cookies": {}}}

test_counts_missing_wordpress_internals if {
	rule.count with input as req("/wp-content/plugins/adminimize/adminimize_page.php", 404)
	rule.count with input as req("/smth/wp-admin/admin-ajax.php", 404)
}

test_ignores_broken_images if not rule.count with input as req("/wp-content/uploads/2024/05/hero.jpg", 404)

test_ignores_a_real_wordpress if not rule.count with input as req("/wp-content/plugins/akismet/readme.txt", 200)

package guardd.rules.probe_campaign_test

import data.guardd.rules.probe_campaign

test_counts_bare_wordpress_probe_answered_404 if {
	probe_campaign.count with input as {"http": {"host": "shop.example", "method": "GET", "path": "/blog/wp-admin/", "norm": {"path": "/blog/wp-admin/"}, "status": 404}}
}

test_ignores_probe_with_user_agent if {
	not probe_campaign.count with input as {"http": {"host": "shop.example", "method": "GET", "path": "/wp-admin/", "norm": {"path": "/wp-admin/"}, "status": 404, "user_agent": "Mozilla/5.0"}}
}

test_ignores_wordpress_the_site_has if {
	not probe_campaign.count with input as {"http": {"host": "shop.example", "method": "GET", "path": "/wp-admin/", "norm": {"path": "/wp-admin/"}, "status": 302}}
}

test_ignores_monitor_without_user_agent if {
	not probe_campaign.count with input as {"http": {"host": "shop.example", "method": "GET", "path": "/health", "norm": {"path": "/health"}, "status": 404}}
}

test_mitigates_probe_before_its_answer if {
	probe_campaign.mitigate with input as {"http": {"host": "shop.example", "method": "GET", "path": "/wordpress/wp-admin/", "norm": {"path": "/wordpress/wp-admin/"}}}
}

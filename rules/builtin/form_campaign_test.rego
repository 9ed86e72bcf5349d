package guardd.rules.form_campaign_test

import data.guardd.rules.form_campaign

post(path, ref) := {"http": {"host": "shop.example", "method": "POST", "path": path, "norm": {"path": path}, "referer": ref, "status": 200}}

bare(path) := {"http": {"host": "shop.example", "method": "POST", "path": path, "norm": {"path": path}, "status": 401}}

test_counts_login_without_referer if {
	form_campaign.count with input as bare("/login")
}

test_counts_registration_and_xmlrpc if {
	form_campaign.count with input as bare("/join_form")
	form_campaign.count with input as bare("/blog/xmlrpc.php")
	form_campaign.count with input as bare("/forgot-password")
}

test_ignores_browser_form_post if {
	not form_campaign.count with input as post("/login", "https://shop.example/login")
}

test_ignores_json_api_login if {
	not form_campaign.count with input as bare("/api/login")
}

test_ignores_other_posts if {
	not form_campaign.count with input as bare("/webhooks/stripe")
	not form_campaign.count with input as bare("/cart/add")
}

test_ignores_form_page_view if {
	not form_campaign.count with input as {"http": {"host": "shop.example", "method": "GET", "path": "/join_form", "norm": {"path": "/join_form"}, "status": 200}}
}

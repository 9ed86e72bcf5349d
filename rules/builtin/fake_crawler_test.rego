package guardd.rules.fake_crawler_test

import data.guardd.rules.fake_crawler as rule

req(bot) := {"http": {"method": "GET", "path": "/", "user_agent": "Mozilla/5.0 (compatible; Googlebot/2.1)", "headers": {}, "cookies": {}}, "ip": {"src": "203.0.113.9"}, "bot": bot}

test_counts_unverified_crawler if rule.count with input as req({"name": "googlebot"})

test_ignores_verified_crawler if not rule.count with input as req({"name": "googlebot", "verified": true})

test_ignores_other_clients if not rule.count with input as req({})

test_ignores_name_not_yet_checked if {
	not rule.count with input as req({"name": "yandex", "pending": true})
}

test_counts_name_that_failed_its_lookup if {
	rule.count with input as req({"name": "yandex"})
}

imessage := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"

# iOS and macOS Messages fetch link previews from the user's own device.
test_ignores_messages_link_preview if {
	not rule.count with input as object.union(req({"name": "facebook"}), {"http": {"user_agent": imessage}})
}

# Facebook's own crawler, and Googlebot, from elsewhere stay fake.
test_counts_facebook_crawler_name_from_elsewhere if {
	rule.count with input as object.union(req({"name": "facebook"}), {"http": {"user_agent": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"}})
	rule.count with input as object.union(req({"name": "googlebot"}), {"http": {"user_agent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) Facebot Twitterbot/1.0"}})
}

package guardd.rules.wordpress_user_enum_test

import data.guardd.rules.wordpress_user_enum as rule

req(args) := {"http": {"method": "GET", "path": "/", "args": args, "headers": {}, "cookies": {}}}

test_counts_author_archives if rule.count with input as req({"author": "2"})

test_ignores_other_queries if not rule.count with input as req({"p": "42"})

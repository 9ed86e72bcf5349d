package rules_test

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

// Load the built-in library once, then evaluate every event with a Matches
// owned by the goroutine.
func Example() {
	set, err := rules.Builtin(rules.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	e := characteristics.Event{
		IP:        netip.MustParseAddr("203.0.113.7"),
		Method:    "GET",
		Path:      "/.env",
		Status:    404,
		UserAgent: "Mozilla/5.0 zgrab/0.x",
	}
	var m rules.Matches
	set.Eval(&e, &m)
	for i, r := range set.Rules() {
		if m.Count(i) {
			fmt.Printf("%s: count per %v, limit %v per %v, then %s\n", r.Name, r.Characteristics, r.Requests, r.Period, r.Action)
		}
	}
	// Output:
	// aggressive_crawl: count per [ip.src http.user_agent], limit 300 per 5m0s, then rate_limit
	// prefix_scraping: count per [ip.src.prefix], limit 40 per 5m0s, then challenge
	// regular_scraping: count per [ip.src http.user_agent], limit 20 per 30m0s, then rate_limit
	// scan_404: count per [ip.src], limit 40 per 5m0s, then block
	// scanner_ua: count per [ip.src], limit 0.5 per 10m0s, then block
	// sensitive_probe: count per [ip.src], limit 0.5 per 10m0s, then block
	// ua_rotation: count per [ip.src], limit 10 per 1m0s, then challenge
}

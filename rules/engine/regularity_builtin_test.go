package engine_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// TestBuiltinRegularScraping runs the built-in library's regular_scraping
// over a scraper that sleeps between page fetches, and over each of the
// regular or busy clients it must leave alone (its false-positive guards).
func TestBuiltinRegularScraping(t *testing.T) {
	set, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const script = "python-requests/2.32.3"
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	loop := func(n int, every time.Duration, jitter time.Duration, path func(i int) string, ua string, seed uint64) []event {
		rng := rand.New(rand.NewPCG(seed, 1))
		var evs []event
		at := time.Duration(0)
		for i := range n {
			evs = append(evs, event{at: at, path: path(i), ua: ua})
			at += every
			if jitter > 0 {
				at += time.Duration(rng.Int64N(int64(jitter)))
			}
		}
		return evs
	}
	product := func(i int) string { return fmt.Sprintf("/product/%d", i) }
	for _, tc := range []struct {
		name   string
		events []event
		round  bool // timestamps to the second, as $time_local logs them
		trip   bool
	}{
		{"sleep(2) scraper, ms timestamps", loop(200, 2*time.Second, 300*time.Millisecond, product, script, 1), false, true},
		{"sleep(2) scraper, s timestamps", loop(200, 2*time.Second, 300*time.Millisecond, product, script, 2), true, true},
		{"sleep(10) scraper with a browser's user agent", loop(100, 10*time.Second, time.Second, product, chrome, 3), true, true},
		{"uptime monitor, one page every 30 s", loop(120, 30*time.Second, 0, func(int) string { return "/" }, "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", 4), true, false},
		{"health check of three pages every 10 s", loop(360, 10*time.Second, 0, func(i int) string { return []string{"/", "/login", "/shop"}[i%3] }, "kube-probe/1.31", 5), true, false},
		{"health endpoint every 2 s", loop(600, 2*time.Second, 0, func(int) string { return "/healthz" }, "kube-probe/1.31", 6), true, false},
		{"single-page app polling its API", loop(600, 5*time.Second, 0, func(int) string { return "/api/v1/notifications" }, chrome, 7), true, false},
		{"single-page app polling a page URL", loop(600, 5*time.Second, 0, func(int) string { return "/inbox/unread" }, chrome, 8), true, false},
		{"person reading pages", loop(60, 5*time.Second, 90*time.Second, product, chrome, 9), true, false},
		{"person clicking through a gallery", loop(60, time.Second, 3*time.Second, func(i int) string { return fmt.Sprintf("/gallery/%d", i) }, chrome, 10), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := engine.New(engine.Config{Rules: set})
			if err != nil {
				t.Fatal(err)
			}
			tripped := run(t, e, tc.events, tc.round)
			if tripped != tc.trip {
				t.Errorf("regular_scraping tripped %v, want %v", tripped, tc.trip)
			}
		})
	}

	// A verified crawler fetching a page a second, like a clock.
	t.Run("verified crawler", func(t *testing.T) {
		e, _ := engine.New(engine.Config{Rules: set})
		evs := loop(600, time.Second, 0, product, "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", 11)
		for i := range evs {
			evs[i].verified = true
		}
		if run(t, e, evs, true) {
			t.Error("tripped on a verified crawler")
		}
	})

	// A single-page app calling its back end outside the known API
	// prefixes, a new item every 200 ms like a clock, logged to the
	// millisecond: regular and many distinct paths, but with the app's
	// page as referer.
	t.Run("single-page app, regular calls to many paths", func(t *testing.T) {
		e, _ := engine.New(engine.Config{Rules: set})
		evs := loop(3000, 200*time.Millisecond, 0, func(i int) string { return fmt.Sprintf("/v1/items/%d", i) }, chrome, 12)
		for i := range evs {
			evs[i].referer = "https://shop.example/app"
		}
		if run(t, e, evs, false) {
			t.Error("tripped on a single-page app")
		}
	})

	// People clicking through a gallery send the previous page as referer.
	t.Run("gallery clicked at a steady 3-5 s, with referers", func(t *testing.T) {
		e, _ := engine.New(engine.Config{Rules: set})
		evs := loop(60, 3*time.Second, 2*time.Second, func(i int) string { return fmt.Sprintf("/gallery/%d", i) }, chrome, 13)
		for i := range evs {
			if i > 0 {
				evs[i].referer = "https://shop.example" + evs[i-1].path
			}
		}
		if run(t, e, evs, true) {
			t.Error("tripped on a person clicking through a gallery")
		}
	})

	// A CGNAT address: forty people with one phone model, each reading
	// pages at human intervals, merged.
	t.Run("CGNAT, one user agent", func(t *testing.T) {
		e, _ := engine.New(engine.Config{Rules: set})
		var evs []event
		for p := range 40 {
			for _, ev := range loop(15, 5*time.Second, 60*time.Second, product, chrome, uint64(100+p)) {
				ev.at += time.Duration(p) * 37 * time.Second
				evs = append(evs, ev)
			}
		}
		slices.SortFunc(evs, func(a, b event) int { return int(a.at - b.at) })
		if run(t, e, evs, true) {
			t.Error("tripped on a CGNAT address")
		}
	})
}

// event is one page view of a client in TestBuiltinRegularScraping.
type event struct {
	at       time.Duration
	path, ua string
	verified bool
	referer  string
}

// run feeds events of one client to e and reports whether
// regular_scraping tripped.
func run(t *testing.T, e *engine.Engine, evs []event, round bool) bool {
	t.Helper()
	var m engine.Matches
	var trips []engine.Trip
	tripped := false
	for _, v := range evs {
		at := t0.Add(v.at)
		if round {
			at = at.Truncate(time.Second)
		}
		ev := characteristics.Event{Time: at, IP: netip.MustParseAddr("203.0.113.50"), Method: "GET", Path: v.path, Status: 200, UserAgent: v.ua}
		ev.Referer = v.referer
		if v.verified {
			ev.Bot = characteristics.Bot{Name: "googlebot", Verified: true}
		}
		m.Reset()
		e.Prepare(&ev, &m)
		trips = e.Apply(ev.Time, m.Items, m.Keys, trips[:0])
		for _, tr := range trips {
			if tr.Rule.Name == "regular_scraping" {
				tripped = true
			}
		}
	}
	return tripped
}

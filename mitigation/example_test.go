package mitigation_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
)

// A rule trips and blocks a client; the decision path then keys each request
// by the shapes in use and looks them up, without allocating.
func Example() {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	store, err := mitigation.New(mitigation.Config{
		Allowlist: mitigation.Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
	}, nil, nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	m, ok, err := store.Add(mitigation.Mitigation{
		Rule:    "login_bruteforce",
		Action:  mitigation.ActionBlock,
		Scope:   mitigation.Scope{{Name: "ip.src", Value: "203.0.113.7"}},
		Expires: now.Add(10 * time.Minute),
	}, now)
	fmt.Println(m.ID, m.Scope, ok, err)
	_, ok, _ = store.Add(mitigation.Mitigation{Rule: "login_bruteforce", Scope: mitigation.Scope{{Name: "ip.src", Value: "192.0.2.1"}}, Expires: now.Add(time.Minute)}, now)
	fmt.Println("allowlisted added:", ok)

	// The decision path.
	ev := &characteristics.Event{IP: netip.MustParseAddr("203.0.113.7"), Path: "/login"}
	buf := make([]byte, 0, 256)
	for _, shape := range store.Shapes() {
		var key uint64
		key, buf, ok = shape.Key(ev, buf)
		if !ok {
			continue // the request lacks one of the shape's characteristics
		}
		if m, ok := store.Lookup(key, now.Add(time.Minute)); ok {
			fmt.Println(m.Action, "by", m.Rule, "until", m.Expires.Format(time.TimeOnly))
		}
	}
	// Output:
	// 1 ip.src=203.0.113.7 true <nil>
	// allowlisted added: false
	// block by login_bruteforce until 10:10:00
}

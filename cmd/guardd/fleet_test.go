//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis/redistest"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/testwait"
)

// TestDaemonFleet: two daemons with a fleet section on one real
// redis-server. A mitigation made on one is enforced by the other's
// decision API, and guardd status shows the fleet.
func TestDaemonFleet(t *testing.T) {
	srv := redistest.Start(t, 0)
	var ds []*testDaemon
	for _, node := range []string{"edge-1", "edge-2"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "rules"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "rules", "login.rego"), []byte(testRule), 0o644)
		os.WriteFile(filepath.Join(dir, "rules", "pages.rego"), []byte(twoWindowRule), 0o644)
		writeTestConfig(t, dir, fmt.Sprintf("fleet:\n  node: %s\n  redis:\n    addresses: [%q]\n", node, srv.Addr))
		td := startDaemon(t, dir)
		defer td.stop(t)
		ds = append(ds, td)
	}
	for _, td := range ds {
		testwait.Until(t, patience, "the fleet's active set loaded", func() bool {
			st := td.d.status().(statusJSON)
			return st.Fleet != nil && st.Fleet.Sync.Loaded && st.Fleet.Counting.LiveNodes == 2
		})
	}
	// guardd status shows each Redis endpoint's breaker: standalone is one.
	// On a busy machine the first flushes can miss their 20 ms deadline and
	// open it; a half-open probe a cool-down later closes it again, so the
	// test waits for that rather than reading the first status.
	want := fmt.Sprintf(`"Endpoints":[{"Name":%q,"Breaker":"closed","Slots":16384}]`, srv.Addr)
	var last []byte
	testwait.Until(t, patience, "guardd status to show the endpoint's breaker closed", func() bool {
		st := ds[0].d.status().(statusJSON)
		b, err := json.Marshal(st.Fleet.Counting)
		if err != nil {
			t.Fatal(err)
		}
		last = b
		return strings.Contains(string(b), want)
	})
	t.Logf("fleet status %s", last)
	if code, _ := ds[1].decide(t, "203.0.113.77", "/"); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("edge-2 answers %d before any mitigation", code)
	}
	now := time.Now()
	if _, _, err := ds[0].d.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "manual",
		Scope: mitigation.Scope{{Name: "ip.src", Value: "203.0.113.77"}}, Expires: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	code0, dec0 := ds[0].decide(t, "203.0.113.77", "/")
	if code0 == http.StatusNoContent || code0 == http.StatusOK {
		t.Fatalf("edge-1 does not enforce its own mitigation: %d %s", code0, dec0)
	}
	testwait.Until(t, patience, "edge-2 to answer as edge-1 does ("+dec0+")", func() bool {
		code, dec := ds[1].decide(t, "203.0.113.77", "/")
		return code == code0 && dec == dec0
	})

	// The test rule trips at more than 5 failed logins a minute: three on
	// each node trip it fleet-wide, and both nodes block the address.
	now = time.Now()
	for i := range 3 {
		ds[0].appendLines(t, logLine("198.51.100.9", "/login", 401, now.Add(time.Duration(i)*time.Millisecond)))
	}
	testwait.Until(t, patience, "edge-1's three failures in Redis", func() bool {
		v, _ := srv.Cmd("HGET", "guardd:{test_login:"+redisKeyOf(t, "198.51.100.9")+"}", "c")
		n, _ := strconv.ParseFloat(v, 64)
		return n >= 3
	})
	for i := range 3 {
		ds[1].appendLines(t, logLine("198.51.100.9", "/login", 401, now.Add(time.Duration(3+i)*time.Millisecond)))
	}
	// edge-2 learns the fleet-wide count at its next flush (a node sees the
	// others' events up to a flush interval late, later if a flush misses
	// its deadline on a busy machine); the brute force goes on, and a
	// failure after that trips the rule.
	testwait.Until(t, patience, "all six failures in Redis", func() bool {
		v, _ := srv.Cmd("HGET", "guardd:{test_login:"+redisKeyOf(t, "198.51.100.9")+"}", "c")
		n, _ := strconv.ParseFloat(v, 64)
		// More than 6 when a flush that missed its deadline on a busy
		// machine was applied all the same and sent again (an over-count,
		// as docs/fleet.md says).
		return n >= 6
	})
	more := 0
	testwait.Until(t, patience, "edge-2 to block the fleet-wide brute force", func() bool {
		code, _ := ds[1].decide(t, "198.51.100.9", "/")
		if code != code0 {
			more++
			ds[1].appendLines(t, logLine("198.51.100.9", "/login", 401, time.Now()))
		}
		return code == code0
	})
	if more > 20 {
		t.Errorf("edge-2 tripped only after %d more failures", more)
	}
	testwait.Until(t, patience, "edge-1 to block it too", func() bool {
		code, _ := ds[0].decide(t, "198.51.100.9", "/")
		return code == code0
	})

	// A rule with two windows (100 a minute, 5 an hour) counts each
	// fleet-wide, under its own keys: three pages on each node are over
	// the hour's limit fleet-wide, and neither node counts it alone.
	if per := ds[0].d.status().(statusJSON).Fleet.PerNode; len(per) != 0 {
		t.Errorf("rules counted per node: %v, want none", per)
	}
	now = time.Now()
	for i, td := range ds {
		for j := range 3 {
			td.appendLines(t, logLine("198.51.100.23", "/page", 200, now.Add(time.Duration(3*i+j)*time.Millisecond)))
		}
	}
	testwait.Until(t, patience, "both nodes' six pages in the hour window's key", func() bool {
		v, _ := srv.Cmd("HGET", "guardd:{test_pages/1h0m0s:"+redisKeyOf(t, "198.51.100.23")+"}", "c")
		n, _ := strconv.ParseFloat(v, 64)
		return n >= 6
	})
	more = 0
	testwait.Until(t, patience, "a node to block the pages fetched across the fleet", func() bool {
		for _, td := range ds {
			if code, _ := td.decide(t, "198.51.100.23", "/"); code == code0 {
				return true
			}
		}
		more++
		ds[more%2].appendLines(t, logLine("198.51.100.23", "/page", 200, time.Now()))
		return false
	})
	if more > 20 {
		t.Errorf("the two-window rule tripped only after %d more pages", more)
	}
}

// twoWindowRule counts pages in two windows: 100 a minute, 5 an hour.
const twoWindowRule = `# METADATA
# title: test pages, two windows
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 100
#   windows: [{period: 1h, requests_per_period: 5}]
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.test_pages

count if input.http.path == "/page"

mitigate if true
`

// redisKeyOf is the hex key of a one-characteristic rule's counter for v.
func redisKeyOf(t *testing.T, v string) string {
	t.Helper()
	return strconv.FormatUint(counting.Hash(append([]byte(v), 0xff)), 16)
}

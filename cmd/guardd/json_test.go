package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/fleet"
)

// noData names the commands and verbs that print no data, so need no
// --json, and why. Every other command and verb must be in
// TestJSONEveryDataCommand's table: a new one fails the test until it is.
var noData = map[string]string{
	"run":              "the daemon: it logs, it prints no data",
	"decisions delete": "prints only which IDs it deleted",
	"decisions export": "writes JSON lines already (--format jsonl, the default)",
	"bouncers add":     "prints the new key alone, for a script to capture",
	"bouncers delete":  "prints only which bouncer it deleted",
}

// snakeKey is a JSON key of the CLI's output: lower snake_case, or a
// characteristic's dotted name ("ip.src", "ip.src.prefix") where a scope is
// keyed by characteristic as DESIGN.md's contracts have it.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$`)

// TestJSONEveryDataCommand runs every data-printing command and verb with
// --json, those that ask a daemon against one started here on loopback, and
// checks that each prints at least one JSON value, only JSON values, and
// only snake_case keys.
func TestJSONEveryDataCommand(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	now := time.Now()
	for _, m := range []mitigation.Mitigation{
		{Rule: "test_login", Action: mitigation.ActionBlock, Scope: mitigation.Scope{{Name: "ip.src", Value: "203.0.113.7"}}, Expires: now.Add(time.Hour)},
		{Rule: "manual", Action: mitigation.ActionChallenge, Origin: "manual", Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "198.51.100.0/24"}}, Expires: now.Add(time.Hour)},
	} {
		if _, _, err := td.d.store.Add(m, now); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	for range 8 {
		lines = append(lines, logLine("192.0.2.9", "/login", 401, now))
	}
	replayLog := filepath.Join(dir, "replay.log")
	os.WriteFile(replayLog, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	importList := filepath.Join(dir, "feed.txt")
	os.WriteFile(importList, []byte("192.0.2.200\n"), 0o644)
	keyFile := filepath.Join(dir, "bouncers.json")
	if rc := dispatch([]string{"bouncers", "add", "--key-file", keyFile, "edge-bouncer"}, io.Discard, io.Discard); rc != 0 {
		t.Fatalf("bouncers add: exit %d", rc)
	}
	admin := clientArgs(td)
	cases := []struct {
		name string
		args []string
	}{
		{"status", admin},
		{"explain", append([]string{"203.0.113.7"}, admin...)},
		{"check", []string{"--config", td.config}},
		{"rules check", []string{"--builtin", filepath.Join(dir, "rules")}},
		{"rules test", []string{"../../rules/testdata/good"}},
		{"decisions list", admin},
		{"decisions add", append([]string{"--scope", "ip.src=192.0.2.100", "--duration", "5m"}, admin...)},
		{"decisions import", append([]string{"--duration", "5m", importList}, admin...)},
		{"fingerprint", []string{sniffTestdata + "tls13.pcap", sniffTestdata + "http.pcap", sniffTestdata + "quic-v1.pcap"}},
		{"replay", []string{"--config", td.config, replayLog}},
		{"replay --clients", []string{"--config", td.config, "--clients", replayLog}},
		{"bouncers list", []string{"--key-file", keyFile}},
		{"keys rotate", []string{"--key-file", filepath.Join(dir, "challenge.key")}},
		{"keys show", []string{"--key-file", filepath.Join(dir, "challenge.key")}},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[strings.TrimSuffix(c.name, " --clients")] = true
		t.Run(c.name, func(t *testing.T) {
			args := append(strings.Fields(strings.TrimSuffix(c.name, " --clients")), c.args...)
			args = append(args, "--json")
			var out, errb bytes.Buffer
			if rc := dispatch(args, &out, &errb); rc != 0 {
				t.Fatalf("guardd %s: exit %d: %s", strings.Join(args, " "), rc, errb.String())
			}
			n := checkJSONOutput(t, out.Bytes())
			if n == 0 {
				t.Fatalf("guardd %s printed no JSON value: %q", strings.Join(args, " "), out.String())
			}
			t.Logf("%d values, first line %s", n, strings.SplitN(out.String(), "\n", 2)[0])
		})
	}
	for name := range commands {
		vs := verbs[name]
		if len(vs) == 0 {
			vs = []string{""}
		}
		for _, v := range vs {
			full := strings.TrimSpace(name + " " + v)
			if !covered[full] && noData[full] == "" {
				t.Errorf("guardd %s is neither tested with --json here nor listed in noData", full)
			}
		}
	}
}

// checkJSONOutput decodes every JSON value of b, failing on anything else
// and on a key that is not snake_case, and returns how many it read.
func checkJSONOutput(t *testing.T, b []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("value %d: %v in %q", n+1, err, b)
		}
		n++
		checkKeys(t, v, "")
	}
}

func checkKeys(t *testing.T, v any, path string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !snakeKey.MatchString(k) {
				t.Errorf("key %q at %s is not snake_case", k, cmp.Or(path, "top level"))
			}
			checkKeys(t, e, path+"."+k)
		}
	case []any:
		for i, e := range v {
			checkKeys(t, e, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// TestCheckJSONError: guardd check --json on a bad configuration exits 1
// and still prints one JSON object, with the error in the operator's words.
func TestCheckJSONError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guardd.yaml")
	os.WriteFile(path, []byte("sources: {nginx: {paths: [/x]}}\ndecison:\n  listen: 127.0.0.1:9480\n"), 0o644)
	var out, errb bytes.Buffer
	if rc := dispatch([]string{"check", "--json", path}, &out, &errb); rc != 1 {
		t.Fatalf("exit %d", rc)
	}
	var res checkJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.OK || res.Config != path ||
		res.Error != fmt.Sprintf(`config: unknown key "decison" at %s:2; did you mean "decision"?`, path) {
		t.Errorf("check --json = %+v, %v (%s)", res, err, out.String())
	}
}

// TestStatusHuman: guardd status prints a table for a person by default,
// with the mitigations counted by action, and JSON with --json.
func TestStatusHuman(t *testing.T) {
	td := startDaemon(t, t.TempDir())
	defer td.stop(t)
	now := time.Now()
	for i, a := range []mitigation.Action{mitigation.ActionBlock, mitigation.ActionBlock, mitigation.ActionChallenge} {
		m := mitigation.Mitigation{Rule: "test_login", Action: a, Scope: mitigation.Scope{{Name: "ip.src", Value: fmt.Sprintf("203.0.113.%d", i+1)}}, Expires: now.Add(time.Hour)}
		if _, _, err := td.d.store.Add(m, now); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if rc := dispatch(append([]string{"status"}, clientArgs(td)...), &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	got := out.String()
	for _, want := range []string{"uptime ", "rules         1: test_login\n", "mitigations   3 (block 2, challenge 1)\n", "counter keys  ", "log tail      0 lines"} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "{") {
		t.Errorf("status prints JSON without --json:\n%s", got)
	}
}

// TestFleetStatusJSON: the fleet part of guardd status --json is
// snake_case too, though the redis and fleet packages' Status types carry
// no JSON tags.
func TestFleetStatusJSON(t *testing.T) {
	st := &fleetStatus{
		Counting: redis.Status{Node: "edge-1", Breaker: "closed", LiveNodes: 2, LastContact: time.Unix(1700000000, 0), ClockOffset: 3 * time.Millisecond,
			Endpoints: []redis.EndpointStatus{{Name: "127.0.0.1:6390", Breaker: "closed", Slots: 16384}}},
		Sync:    fleet.Status{StreamID: "1-0", Pending: 1, Loaded: true},
		PerNode: []string{"regular_scraping (regularity)"},
	}
	b, err := json.Marshal(statusJSON{Fleet: st})
	if err != nil {
		t.Fatal(err)
	}
	checkJSONOutput(t, b)
	for _, want := range []string{`"endpoints":[{"name":"127.0.0.1:6390","breaker":"closed","slots":16384}]`, `"live_nodes":2`, `"clock_offset_seconds":0.003`,
		`"mitigations":{"stream_id":"1-0","pending":1,"loaded":true}`, `"per_node_rules":["regular_scraping (regularity)"]`, `"last_contact":"2023-11-14T22:13:20Z"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("fleet status lacks %s:\n%s", want, b)
		}
	}
	var back statusView
	if err := json.Unmarshal(b, &back); err != nil || back.Fleet == nil || back.Fleet.Counting.LiveNodes != 2 || !slices.Equal(back.Fleet.PerNode, st.PerNode) {
		t.Errorf("read back: %+v, %v", back.Fleet, err)
	}
}

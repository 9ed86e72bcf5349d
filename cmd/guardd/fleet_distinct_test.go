//go:build integration

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guardd/guardd/counting/redis/redistest"
)

// campaignRule counts distinct addresses per form endpoint, as
// form_campaign does per (host, path): more than two addresses posting to
// one endpoint in ten minutes is a campaign, and the mitigation covers the
// endpoint for every address.
const campaignRule = `# METADATA
# title: test form campaign
# custom:
#   characteristics: [http.path]
#   distinct: ip.src
#   period: 10m
#   requests_per_period: 2
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.test_campaign

count if {
	input.http.method == "POST"
	input.http.path == "/join_form"
}

mitigate if input.http.path == "/join_form"
`

// TestDaemonFleetDistinct: three guardd run processes share one
// redis-server; a campaign of six addresses posts to one form, each
// address to one node only, so that no node sees more than two addresses
// (the rule's limit). One node that saw them all would trip at the third;
// the fleet trips too, and every node then refuses the form to an
// address it has never seen. Once with a test rule, once with the
// built-in form_campaign (distinct addresses per host and form path).
func TestDaemonFleetDistinct(t *testing.T) {
	srv := redistest.Start(t, 0)
	for _, tc := range []struct {
		name, rule string
		rules      string // the rules section
		logFormat  string // "" for combined
	}{
		{name: "test rule", rule: "test_campaign", rules: "{disable_builtin: true, dirs: [%q]}"},
		{name: "built-in form_campaign", rule: "form_campaign", rules: "{dirs: [%q]}",
			logFormat: `'$remote_addr - - [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$host"'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Cmd("FLUSHALL")
			testFleetCampaign(t, srv, tc.rule, tc.rules, tc.logFormat)
		})
	}
}

func testFleetCampaign(t *testing.T, srv *redistest.Server, rule, rulesSection, logFormat string) {
	type node struct{ log, decide string }
	var nodes []*node
	for i := range 3 {
		dir := t.TempDir()
		rules := filepath.Join(dir, "rules")
		os.MkdirAll(rules, 0o755)
		if rule == "test_campaign" {
			if err := os.WriteFile(filepath.Join(rules, "campaign.rego"), []byte(campaignRule), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		n := &node{log: filepath.Join(dir, "access.log"), decide: "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))}
		os.WriteFile(n.log, nil, 0o644)
		cfg := fmt.Sprintf(`sources: {nginx: {paths: [%q], poll_interval: 20ms, from_start: true}}
decision: {listen: %q}
admin: {listen: 127.0.0.1:0}
rules: `+rulesSection+`
mitigation: {state_dir: %q}
fleet:
  node: edge-%d
  redis: {addresses: [%q]}
`, n.log, n.decide, rules, filepath.Join(dir, "state"), i+1, srv.Addr)
		if logFormat != "" {
			cfg += "log: {format: " + logFormat + "}\n"
		}
		conf := filepath.Join(dir, "guardd.yaml")
		if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := guarddProcess(t, "run", "--config", conf)
		var stderr bytes.Buffer // read only after Wait
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		name := "edge-" + strconv.Itoa(i+1)
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill() // by PID: the process this test started
				<-done
			}
			if t.Failed() {
				t.Logf("%s's log:\n%s", name, stderr.Bytes())
			}
		})
		nodes = append(nodes, n)
	}
	// decide returns the decision API's status and X-Guardd-Decision for
	// a POST of ip to the form (401 and "block;..." when refused).
	decide := func(n *node, ip string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+n.decide+"/v1/decide", nil)
		req.Header.Set("X-Real-IP", ip)
		req.Header.Set("X-Original-Method", "POST")
		req.Header.Set("X-Original-URI", "/join_form")
		req.Host = "shop.example"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, ""
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Guardd-Decision")
	}
	redistest.WaitFor(t, 30*time.Second, "three nodes live in Redis, each deciding", func() bool {
		v, err := srv.Cmd("ZCARD", "guardd:{fleet}:nodes")
		if err != nil || v != "3" {
			return false
		}
		for _, n := range nodes {
			if c, _ := decide(n, "192.0.2.1"); c != http.StatusOK && c != http.StatusNoContent {
				return false
			}
		}
		return true
	})
	appendLine := func(n *node, ip string) {
		f, err := os.OpenFile(n.log, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		line := fmt.Sprintf("%s - - [%s] \"POST /join_form HTTP/1.1\" 200 12 \"-\" \"spam/1.0\"", ip, time.Now().Format("02/Jan/2006:15:04:05 -0700"))
		if logFormat != "" {
			line += ` "shop.example"`
		}
		fmt.Fprintln(f, line)
	}
	// Six addresses, two per node; each posts again and again to its one
	// node, as a campaign does, until every node blocks the form.
	addrs := []string{"198.51.100.10", "198.51.100.11", "198.51.100.12", "2001:db8::13", "2001:db8::14", "2001:db8::15"}
	rounds := 0
	redistest.WaitFor(t, 30*time.Second, "every node to refuse the campaign's form to a new address", func() bool {
		rounds++
		for i, a := range addrs {
			appendLine(nodes[i%3], a)
		}
		for i, n := range nodes {
			if c, dec := decide(n, "203.0.113.99"); c != http.StatusUnauthorized || !strings.Contains(dec, "rule="+rule) {
				if rounds%50 == 0 {
					t.Logf("round %d: edge-%d answers %d %q", rounds, i+1, c, dec)
				}
				return false
			}
		}
		return true
	})
	t.Logf("caught after %d rounds of six posts", rounds)
}

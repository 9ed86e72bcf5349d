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
// redis-server. A campaign of six addresses posts to one form, each
// address to one node only, so that no node sees more than two addresses
// (the rule's limit): one node that saw them all would trip at the third;
// the fleet trips too, and every node then refuses the form to an address
// it has never seen. Once with a test rule, once with the built-in
// form_campaign (distinct addresses per host and form path). Then the
// built-in scan_404 (distinct 404 paths per address, two windows): one
// address's scan of 60 pages, 20 on each node (the limit is 40), is
// blocked on every node.
func TestDaemonFleetDistinct(t *testing.T) {
	srv := redistest.Start(t, 0)
	hostFormat := `'$remote_addr - - [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$host"'`
	t.Run("test rule", func(t *testing.T) {
		nodes := startFleetNodes(t, srv, "{disable_builtin: true, dirs: [%q]}", campaignRule, "")
		fleetCampaign(t, nodes, "test_campaign", false)
	})
	t.Run("built-in form_campaign", func(t *testing.T) {
		srv.Cmd("FLUSHALL")
		nodes := startFleetNodes(t, srv, "{dirs: [%q]}", "", hostFormat)
		fleetCampaign(t, nodes, "form_campaign", true)
	})
	t.Run("built-in scan_404", func(t *testing.T) {
		srv.Cmd("FLUSHALL")
		nodes := startFleetNodes(t, srv, "{dirs: [%q]}", "", "")
		// scan_404 blocks an address past 40 distinct missing pages in 5
		// minutes. The scan asks each node for 20 pages of its own (60 in
		// all, 20 per node), then goes on asking for pages it asked for
		// before: one node that saw it all would block it at the 41st
		// page; no node alone ever reaches 41.
		const ip = "198.51.100.50"
		rounds := 0
		redistest.WaitFor(t, 30*time.Second, "every node to block the scan spread over them", func() bool {
			rounds++
			for i, n := range nodes {
				n.appendLine(t, fmt.Sprintf(`%s - - [%s] "GET /old/page-%d-%d.html HTTP/1.1" 404 12 "-" "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"`,
					ip, time.Now().Format("02/Jan/2006:15:04:05 -0700"), min(rounds, 20), i))
			}
			for _, n := range nodes {
				if c, dec := n.decide(ip, "GET", "/", ""); c != http.StatusUnauthorized || !strings.Contains(dec, "rule=scan_404") {
					return false
				}
			}
			return true
		})
		t.Logf("caught after %d rounds (%d distinct pages)", rounds, 3*min(rounds, 20))
	})
}

// fleetNode is one guardd run process of a test fleet.
type fleetNode struct{ log, decideAddr string }

// startFleetNodes starts three guardd run processes with a fleet section
// on srv, rules as rulesSection (a format with the rule directory), with
// ruleFile in that directory when not "", and log.format logFormat when
// not "", and waits until each is live in Redis and deciding.
func startFleetNodes(t *testing.T, srv *redistest.Server, rulesSection, ruleFile, logFormat string) []*fleetNode {
	t.Helper()
	var nodes []*fleetNode
	for i := range 3 {
		dir := t.TempDir()
		rules := filepath.Join(dir, "rules")
		os.MkdirAll(rules, 0o755)
		if ruleFile != "" {
			if err := os.WriteFile(filepath.Join(rules, "rule.rego"), []byte(ruleFile), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		n := &fleetNode{log: filepath.Join(dir, "access.log"), decideAddr: "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))}
		os.WriteFile(n.log, nil, 0o644)
		cfg := fmt.Sprintf(`sources: {nginx: {paths: [%q], poll_interval: 20ms, from_start: true}}
decision: {listen: %q}
admin: {listen: 127.0.0.1:0}
rules: `+rulesSection+`
mitigation: {state_dir: %q}
fleet:
  node: edge-%d
  redis: {addresses: [%q]}
`, n.log, n.decideAddr, rules, filepath.Join(dir, "state"), i+1, srv.Addr)
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
	redistest.WaitFor(t, 30*time.Second, "three nodes live in Redis, each deciding", func() bool {
		v, err := srv.Cmd("ZCARD", "guardd:{fleet}:nodes")
		if err != nil || v != "3" {
			return false
		}
		for _, n := range nodes {
			if c, _ := n.decide("192.0.2.1", "GET", "/", ""); c != http.StatusOK && c != http.StatusNoContent {
				return false
			}
		}
		return true
	})
	return nodes
}

// decide returns the node's decision API status and X-Guardd-Decision
// for a request of ip (401 and "block;..." when refused).
func (n *fleetNode) decide(ip, method, uri, host string) (int, string) {
	req, _ := http.NewRequest("GET", "http://"+n.decideAddr+"/v1/decide", nil)
	req.Header.Set("X-Real-IP", ip)
	req.Header.Set("X-Original-Method", method)
	req.Header.Set("X-Original-URI", uri)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Guardd-Decision")
}

func (n *fleetNode) appendLine(t *testing.T, line string) {
	f, err := os.OpenFile(n.log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// fleetCampaign: six addresses, two per node, each posts again and again
// to its one node, as a campaign does, until every node refuses the form
// to a new address under rule. withHost: the log lines end with the host.
func fleetCampaign(t *testing.T, nodes []*fleetNode, rule string, withHost bool) {
	addrs := []string{"198.51.100.10", "198.51.100.11", "198.51.100.12", "2001:db8::13", "2001:db8::14", "2001:db8::15"}
	rounds := 0
	redistest.WaitFor(t, 30*time.Second, "every node to refuse the campaign's form to a new address", func() bool {
		rounds++
		for i, a := range addrs {
			line := fmt.Sprintf(`%s - - [%s] "POST /join_form HTTP/1.1" 200 12 "-" "spam/1.0"`, a, time.Now().Format("02/Jan/2006:15:04:05 -0700"))
			if withHost {
				line += ` "shop.example"`
			}
			nodes[i%3].appendLine(t, line)
		}
		for i, n := range nodes {
			if c, dec := n.decide("203.0.113.99", "POST", "/join_form", "shop.example"); c != http.StatusUnauthorized || !strings.Contains(dec, "rule="+rule) {
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

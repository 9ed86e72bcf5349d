package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/ingest/sniff"
)

const portFormat = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $remote_port`

type mitigationLine struct {
	Rule  string            `json:"rule"`
	Scope map[string]string `json:"scope"`
}

func replayJSON(t *testing.T, args ...string) []mitigationLine {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := runReplay(append([]string{"--json", "--progress", "never"}, args...), &out, &errb); rc != 0 {
		t.Fatalf("replay %v: %d %s", args, rc, errb.String())
	}
	var ms []mitigationLine
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m mitigationLine
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		ms = append(ms, m)
	}
	return ms
}

// TestReplayTLSMismatch is the fingerprint consistency check end to end: a
// capture (characteristics/bots/testdata/capture.sh) of Chromium headless,
// curl, Python urllib, Python requests and Go's net/http, each from its own
// loopback address and each sending a Chrome user agent, replayed with the
// access log lines of those requests through the built-in library. The
// library stacks must be refused by tls_mismatch, Chromium must not be.
func TestReplayTLSMismatch(t *testing.T) {
	pcap := filepath.Join("..", "..", "characteristics", "bots", "testdata", "chrome-ua-clients.pcap")
	ua := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	var lines []string
	if err := sniff.ReadFiles([]string{pcap}, sniff.Config{}, func(r *sniff.Record) {
		if r.Proto == "tls" {
			lines = append(lines, fmt.Sprintf(`%s - - [%s] "GET / HTTP/1.1" 200 5 "-" "%s" %d`,
				r.Src, r.Time.Format("02/Jan/2006:15:04:05 -0700"), ua, r.SrcPort))
		}
	}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	got := map[string]bool{}
	for _, m := range replayJSON(t, "--format", portFormat, "--pcap", pcap, log) {
		if m.Rule == "tls_mismatch" {
			got[m.Scope["ip.src"]] = true
		} else {
			t.Errorf("unexpected mitigation %+v", m)
		}
	}
	for ip, want := range map[string]bool{"127.0.0.1": false, "127.0.0.2": true, "127.0.0.3": true, "127.0.0.4": true, "127.0.0.5": true} {
		if got[ip] != want {
			t.Errorf("%s: tls_mismatch %v, want %v", ip, got[ip], want)
		}
	}
	// Without the capture nothing is known of the TLS stacks.
	if ms := replayJSON(t, "--format", portFormat, log); len(ms) != 0 {
		t.Errorf("without --pcap: %+v", ms)
	}
}

// TestReplayRealCrawlersNeverMitigated: Googlebot and bingbot from their
// published ranges crawl hard (two pages a second, hundreds of distinct
// missing pages) and are never mitigated by the built-in library; the same
// user agent from elsewhere is a fake crawler.
func TestReplayRealCrawlersNeverMitigated(t *testing.T) {
	google := "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	bing := "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for k := range 3600 {
		at := t0.Add(time.Duration(k) * 500 * time.Millisecond).Format("02/Jan/2006:15:04:05 -0700")
		status, path := 200, fmt.Sprintf("/product/%d", k)
		if k%5 == 0 {
			status, path = 404, fmt.Sprintf("/old/%d.html", k)
		}
		for _, c := range []struct{ ip, ua string }{{"66.249.66.1", google}, {"2001:4860:4801:10::3", google}, {"157.55.39.20", bing}} {
			fmt.Fprintf(&b, "%s - - [%s] \"GET %s HTTP/1.1\" %d 512 \"-\" \"%s\" 40000\n", c.ip, at, path, status, c.ua)
		}
		if k < 3 {
			fmt.Fprintf(&b, "203.0.113.5 - - [%s] \"GET %s HTTP/1.1\" 200 512 \"-\" \"%s\" 40000\n", at, path, google)
		}
	}
	log := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(log, []byte(b.String()), 0o644)
	ms := replayJSON(t, "--format", portFormat, log)
	fake := false
	for _, m := range ms {
		if m.Scope["ip.src"] == "203.0.113.5" && m.Rule == "fake_crawler" {
			fake = true
			continue
		}
		t.Errorf("mitigation of a real crawler: %+v", m)
	}
	if !fake {
		t.Error("the fake Googlebot was not mitigated")
	}
}

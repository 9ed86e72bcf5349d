//go:build integration

package ja4h

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgainstTshark sends each table request as one TCP segment to port 80
// (text2pcap) and compares what tshark's HTTP dissector reads (method,
// target, version, the first Accept-Language, the cookie pairs) with our
// parse. Needs tshark and text2pcap; skipped without them.
func TestAgainstTshark(t *testing.T) {
	for _, tool := range []string{"tshark", "text2pcap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	// tshark's HTTP dissector knows neither unknown nor lowercase methods,
	// and splits the request line at the second space (the spec takes the
	// version after the last one, so targets may hold spaces).
	var cases []fpCase
	for _, tc := range fpCases() {
		switch tc.name {
		case "unknown_method", "method_case_insensitive":
			continue
		}
		cases = append(cases, tc)
	}
	var dump strings.Builder
	for _, tc := range cases {
		for i, b := range []byte(crlf(strings.ReplaceAll(tc.req, "\r\n", "\n"))) {
			if i%16 == 0 {
				fmt.Fprintf(&dump, "\n%06x", i)
			}
			fmt.Fprintf(&dump, " %02x", b)
		}
		dump.WriteString("\n")
	}
	dir := t.TempDir()
	txt, pcap := filepath.Join(dir, "http.txt"), filepath.Join(dir, "http.pcap")
	if err := os.WriteFile(txt, []byte(dump.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("text2pcap", "-q", "-T", "50000,80", txt, pcap).CombinedOutput(); err != nil {
		t.Fatalf("text2pcap: %v\n%s", err, out)
	}
	out, err := exec.Command("tshark", "-r", pcap, "-Y", "http.request", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=\x1e",
		"-e", "http.request.method", "-e", "http.request.uri", "-e", "http.request.version",
		"-e", "http.accept_language", "-e", "http.cookie_pair").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("tshark saw %d requests, want %d:\n%s", len(lines), len(cases), out)
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := strings.Split(lines[i], "\t")
			var p Parser
			p.Feed([]byte(tc.req), func(r *Request) {
				if tc.name == "spaces_in_target" {
					f[1], f[2] = string(r.Target), string(r.Version)
				}
				if f[0] != string(r.Method) || f[1] != string(r.Target) || f[2] != string(r.Version) {
					t.Errorf("request line: tshark %q %q %q, ours %q %q %q", f[0], f[1], f[2], r.Method, r.Target, r.Version)
				}
				var lang []byte
				for _, h := range r.Headers {
					if asciiEqualFold(h.Name, "accept-language") {
						lang = h.Value
						break
					}
				}
				if first, _, _ := strings.Cut(f[3], "\x1e"); first != string(lang) {
					t.Errorf("accept-language: tshark %q, ours %q", f[3], lang)
				}
				var ours, theirs []string
				for _, h := range r.Headers {
					if asciiEqualFold(h.Name, "cookie") {
						for _, c := range appendCookies(nil, h.Value) {
							ours = append(ours, string(c.pair))
						}
					}
				}
				for _, c := range strings.Split(f[4], "\x1e") {
					if strings.Contains(c, "=") {
						theirs = append(theirs, c) // our rule drops pieces without '='
					}
				}
				slices.Sort(ours)
				slices.Sort(theirs)
				if !slices.Equal(ours, theirs) {
					t.Errorf("cookie pairs: tshark %q, ours %q", theirs, ours)
				}
			})
		})
	}
}

package rules

import (
	"log/slog"
	"testing"
	"testing/fstest"
)

func TestRequestTime(t *testing.T) {
	meta := func(chars string) string {
		return "# METADATA\n# title: t\n# custom:\n#   characteristics: [" + chars + "]\n#   period: 1m\n#   requests_per_period: 5\n#   action: block\n#   mitigation_timeout: 1m\n"
	}
	tests := []struct {
		name, chars, body string
		want              bool
	}{
		{"path and method", "ip.src", `count if { input.http.method == "POST"; startswith(input.http.path, "/api") }`, true},
		{"headers and cookies", "ip.src.prefix", `count if { input.http.headers["x-api-key"] == ""; input.http.cookies.session }`, true},
		{"header by variable name", "ip.src", "count if { some k; input.http.headers[k] == \"x\" }", true},
		{"helper in the same package", "ip.src", "count if bad(input.http.user_agent)\nbad(ua) if contains(ua, \"curl\")", true},
		{"status", "ip.src", `count if input.http.status == 404`, false},
		{"status in the mitigation expression", "ip.src", "count if input.http.path == \"/\"\nmitigate if input.http.status == 200", false},
		{"log variable", "ip.src", `count if input.log.upstream_status == "502"`, false},
		{"fingerprint", "ip.src", `count if input.tls.ja4 == "x"`, false},
		{"source", "ip.src", `count if input.source == "nginx_log"`, false},
		{"whole input", "ip.src", `count if object.get(input, ["http", "status"], 0) == 404`, false},
		{"input.http bound", "ip.src", "count if { h := input.http; h.status == 404 }", false},
		{"dynamic http field", "ip.src", "count if { some f; input.http[f] == 404 }", false},
		{"key known only from the log", "tls.ja4", `count if input.http.path == "/login"`, false},
		{"other package", "ip.src", `count if data.guardd.rules.other.count`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := fstest.MapFS{"r.rego": {Data: []byte(meta(tt.chars) + "package guardd.rules.r\n\n" + tt.body + "\n")}}
			if tt.name == "other package" {
				files["other.rego"] = &fstest.MapFile{Data: []byte(meta("ip.src") + "package guardd.rules.other\n\ncount if input.http.path == \"/\"\n")}
			}
			set, err := Load(files, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			var r *Rule
			for _, x := range set.Rules() {
				if x.Name == "r" {
					r = x
				}
			}
			if got := r.RequestTime; got != tt.want {
				t.Errorf("RequestTime = %v, want %v", got, tt.want)
			}
		})
	}
}

// The built-in rules that count without the status: the others need the
// log line.
func TestBuiltinRequestTime(t *testing.T) {
	set, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"aggressive_crawl": true, "asn_scraping": true, "scanner_ua": true, "exploit_payload": true,
		"injection": true, "sqli_probe": true, "path_traversal": true,
		"aggressive_crawl_session": true, "fake_crawler": true, "prefix_scraping": true,
		"ua_rotation": true, "cache_busting": true, "wordpress_user_enum": true, "regular_scraping": true,
		"api_enumeration": true,
	}
	for _, r := range set.Rules() {
		if r.RequestTime != want[r.Name] {
			t.Errorf("%s: RequestTime = %v, want %v", r.Name, r.RequestTime, want[r.Name])
		}
	}
}

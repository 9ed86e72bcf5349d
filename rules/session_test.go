package rules

import (
	"log/slog"
	"slices"
	"testing"
	"testing/fstest"
)

// TestReadsSession: Rule.Session holds for a rule that may read session.*,
// so that the pipeline keeps sessions for it, and only then.
func TestReadsSession(t *testing.T) {
	meta := func(chars, extra string) string {
		return "# METADATA\n# title: t\n# custom:\n#   characteristics: [" + chars + "]\n#   period: 1m\n#   requests_per_period: 5\n#   action: log\n" + extra
	}
	tests := []struct {
		name, chars, extra, body string
		want                     bool
	}{
		{"session field", "ip.src", "", `count if input.session.pages_without_assets >= 4`, true},
		{"session flag in the mitigation expression", "ip.src", "", "count if input.http.path == \"/\"\nmitigate if input.session.cookie_never", true},
		{"session as the score", "ip.src", "#   score: session.pages\n", `count if input.http.path == "/"`, true},
		{"whole input", "ip.src", "", `count if object.get(input, ["session", "pages"], 0) > 3`, true},
		{"dynamic top-level field", "ip.src", "", `count if { some f; input[f].pages > 3 }`, true},
		{"other package", "ip.src", "", `count if data.guardd.rules.other.count`, true},
		{"request fields only", "ip.src", "", `count if { input.http.method == "POST"; not input.http.referer }`, false},
		{"input.http bound", "ip.src", "", "count if { h := input.http; h.status == 404 }", false},
		{"configuration's constants", "ip.src", "", "import data.guardd.config\ncount if input.http.path in config.login_paths", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := fstest.MapFS{"r.rego": {Data: []byte(meta(tt.chars, tt.extra) + "package guardd.rules.r\n\n" + tt.body + "\n")}}
			if tt.name == "other package" {
				files["other.rego"] = &fstest.MapFile{Data: []byte(meta("ip.src", "") + "package guardd.rules.other\n\ncount if input.http.path == \"/\"\n")}
			}
			set, err := Load(files, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range set.Rules() {
				if r.Name == "r" && r.Session != tt.want {
					t.Errorf("Session = %v, want %v", r.Session, tt.want)
				}
			}
		})
	}
}

// TestBuiltinSessionRules: the built-in library's session rules, and no
// other, read session.*.
func TestBuiltinSessionRules(t *testing.T) {
	set, err := Builtin(Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Rules() {
		if r.Session {
			got = append(got, r.Name)
		}
	}
	want := []string{"fingerprint_campaign", "session_no_assets", "session_post_without_get", "session_proto_changed"}
	if !slices.Equal(got, want) {
		t.Errorf("rules reading session.*: %v, want %v", got, want)
	}
}

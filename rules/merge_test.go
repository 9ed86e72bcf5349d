package rules

import (
	"strings"
	"testing"
)

var scannerNeedles = []string{
	"sqlmap", "nikto/", "nmap scripting engine", "nmap nse", "masscan", "zgrab/",
	"nuclei", "wpscan", "dirbuster", "gobuster", "feroxbuster", "fuzz faster u fool",
	"wfuzz/", "acunetix", "netsparker", "openvas", "w3af.org", "arachni",
	"skipfish", " havij", "jaeles", "whatweb", "morfeus", "nessus", "joomscan",
	"commix", "xsstrike", "(hydra)", "medusa/", "brutus", "appscan", "webinspect",
	"paros/", "burpcollaborator", "interact.sh", "censysinspect",
}

// TestMultiContains checks the matcher against strings.Contains on every
// needle at every position, folded and not.
func TestMultiContains(t *testing.T) {
	sets := [][]string{scannerNeedles, {"a"}, {"ab", "b"}, {"/.env", "/.git", "~"}, {"xyz", "", "q"}, {"abc", "abcd", "bcde"}}
	hay := append([]string{"", "a", "ABC", "xxabcdxx", "Mozilla/5.0 (Nikto/2.1.6)", "SQLMAP", "zzz/.ENV", "tail~"}, genUAs...)
	hay = append(hay, genPaths...)
	for _, needles := range sets {
		m := newMultiContains(needles)
		for _, h := range hay {
			for _, fold := range []bool{false, true} {
				s := h
				if fold {
					s = strings.ToLower(h)
				}
				want := false
				for _, n := range needles {
					if strings.Contains(s, n) {
						want = true
					}
				}
				if !isASCII(h) && fold {
					continue // the fused path falls back for non-ASCII input
				}
				if got := m.match(h, fold); got != want {
					t.Errorf("needles %q, %q (fold %v): got %v, want %v", needles, h, fold, got, want)
				}
			}
		}
	}
}

func FuzzMultiContains(f *testing.F) {
	for _, h := range genUAs {
		f.Add(h, "sqlmap", "nikto/")
	}
	f.Fuzz(func(t *testing.T, h, n1, n2 string) {
		if len(h) > 4096 {
			return
		}
		m := newMultiContains([]string{n1, n2})
		want := strings.Contains(h, n1) || strings.Contains(h, n2)
		if got := m.match(h, false); got != want {
			t.Fatalf("match(%q) over %q, %q = %v, want %v", h, n1, n2, got, want)
		}
	})
}

func BenchmarkMultiContains(b *testing.B) {
	m := newMultiContains(scannerNeedles)
	uas := genUAs[:3]
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		m.match(uas[i%3], true)
		i++
	}
}

func BenchmarkAffixSet(b *testing.B) {
	m := newAffixSet([]string{"/api/", "/graphql", "/_next/", "/static/", "/assets/", "/wp-json/", "/wp-content/",
		"/wp-includes/", "/ajax", "/xhr/", "/rest/", "/socket.io/", "/sockjs", "/cdn-cgi/", "/__", "/.well-known/", "/health", "/metrics"}, false)
	paths := []string{"/products/42", "/blog/2024/05/hello-world", "/search", "/cart"}
	i := 0
	for b.Loop() {
		m.match(paths[i%4])
		i++
	}
}

func TestAffixSet(t *testing.T) {
	sets := [][]string{
		{"/api/", "/graphql", "/_next/", "/static/", "/a", "/", "x"},
		{".css", ".js", "~", ".tar.gz", "gz"},
		{"", "abc"},
		{"ab"},
	}
	hay := append([]string{"", "/", "x", "/api", "/api/v1", "a.tar.gz", "~", "b.js", "c.css", "/static/x", "ab", "zab"}, genPaths...)
	for _, set := range sets {
		for _, suffix := range []bool{false, true} {
			a := newAffixSet(set, suffix)
			for _, h := range hay {
				want := false
				for _, s := range set {
					if (!suffix && strings.HasPrefix(h, s)) || (suffix && strings.HasSuffix(h, s)) {
						want = true
					}
				}
				if got := a.match(h); got != want {
					t.Errorf("set %q suffix=%v: match(%q) = %v, want %v", set, suffix, h, got, want)
				}
			}
		}
	}
}

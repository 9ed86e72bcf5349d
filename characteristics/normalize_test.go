package characteristics

import (
	"net/url"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormPath(t *testing.T) {
	tests := []struct {
		name, raw, want string
		an              Anomaly
	}{
		{"plain", "/products/42", "/products/42", 0},
		{"root", "/", "/", 0},
		{"trailing slash", "/a/b/", "/a/b/", 0},
		{"encoded slash", "/%2fetc%2fpasswd", "/etc/passwd", AnomalyRepeatedSlash},
		{"encoded dots", "/cgi-bin/.%2e/%2e%2e/%2e%2e/bin/sh", "/bin/sh", AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"twice encoded", "/%252E%252E%252Ffoo1", "/foo1", AnomalyDoubleEncoded | AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"nested escape", "/cgi-bin/%%32%65%%32%65/%%32%65%%32%65/bin/bash", "/bin/bash", AnomalyBadEscape | AnomalyDoubleEncoded | AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"tomcat path param", "/tmui/login.jsp/..;/tmui/locallb/workspace/fileRead.jsp", "/tmui/tmui/locallb/workspace/fileRead.jsp", AnomalyPathParam | AnomalyDotSegment | AnomalyTraversal},
		{"encoded path param", "/tmui/login.jsp/%2E%2E;/tmui/x.jsp", "/tmui/tmui/x.jsp", AnomalyPathParam | AnomalyDotSegment | AnomalyTraversal},
		{"empty param segment", "/s/lkx/_/;/META-INF/pom.properties", "/s/lkx/_/META-INF/pom.properties", AnomalyPathParam | AnomalyRepeatedSlash},
		{"repeated slashes", "//phpMyAdmin/scripts/setup.php", "/phpMyAdmin/scripts/setup.php", AnomalyRepeatedSlash},
		{"backslash", `/..\..\windows\win.ini`, "/windows/win.ini", AnomalyBackslash | AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"overlong dot", "/%c0%ae%c0%ae/etc/passwd", "/etc/passwd", AnomalyOverlongUTF8 | AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"three-byte overlong", "/a/%e0%80%ae%e0%80%ae/b", "/b", AnomalyOverlongUTF8 | AnomalyDotSegment | AnomalyTraversal},
		{"invalid utf8", "/a%ff", "/a\xff", AnomalyInvalidUTF8},
		{"valid utf8", "/caf%C3%A9", "/café", 0},
		{"null byte", "/a.php%00.jpg", "/a.php\x00.jpg", AnomalyNullByte},
		{"iis u escape", "/%u002e%u002e/x", "/x", AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"dot segment", "/a/./b", "/a/b", AnomalyDotSegment},
		{"well-known is no dot segment", "/.well-known/acme-challenge/tok", "/.well-known/acme-challenge/tok", 0},
		{"dots above root", "/../../etc/passwd", "/etc/passwd", AnomalyDotSegment | AnomalyTraversal | AnomalyEscapesRoot},
		{"absolute uri kept", "http://www.example.com:80/ip4.php", "http://www.example.com:80/ip4.php", 0},
		{"bad escape", "/100%", "/100%", AnomalyBadEscape},
		{"authority", "foo.com:25", "foo.com:25", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Event{Path: tt.raw}
			if got := e.NormPath(); got != tt.want {
				t.Errorf("NormPath(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			if got := e.Anomalies(); got != tt.an {
				t.Errorf("Anomalies(%q) = %s, want %s", tt.raw, anomalyString(got), anomalyString(tt.an))
			}
			if e.Path != tt.raw {
				t.Errorf("raw path changed to %q", e.Path)
			}
		})
	}
}

func anomalyString(a Anomaly) string {
	var out []string
	for i, n := range anomalyNames {
		if a&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, "|")
}

func TestNormFieldsAndArgs(t *testing.T) {
	e := &Event{
		Query:     "q=select+dining+chairs&s=index/%5Cthink%5Capp&x=%2527a%2527&flag&%61rg=1",
		UserAgent: "%24%7Bjndi:ldap://x%7D",
		Referer:   "https://example.com/?a=%3Cscript%3E",
	}
	if got, want := e.NormQuery(), `q=select dining chairs&s=index/\think\app&x='a'&flag&arg=1`; got != want {
		t.Errorf("NormQuery = %q, want %q", got, want)
	}
	if got, want := e.NormUserAgent(), "${jndi:ldap://x}"; got != want {
		t.Errorf("NormUserAgent = %q, want %q", got, want)
	}
	if got, want := e.NormReferer(), "https://example.com/?a=<script>"; got != want {
		t.Errorf("NormReferer = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"q", "select dining chairs", true},
		{"s", `index/\think\app`, true},
		{"x", "%27a%27", true},
		{"flag", "", true},
		{"arg", "1", true},
		{"missing", "", false},
	} {
		got, ok := e.Arg(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Arg(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	// Values returned earlier stay valid while more are decoded.
	q, _ := e.Arg("q")
	for i := 0; i < 50; i++ {
		e.Arg("s")
	}
	if q != "select dining chairs" {
		t.Errorf("earlier Arg value changed to %q", q)
	}
}

func TestNormFollowsReset(t *testing.T) {
	var e Event
	e.Path = "/a/%2e%2e/b"
	if got := e.NormPath(); got != "/b" {
		t.Fatalf("NormPath = %q", got)
	}
	e.Reset()
	e.Path = "/plain"
	if got := e.NormPath(); got != "/plain" {
		t.Fatalf("after Reset NormPath = %q", got)
	}
	if e.Anomalies() != 0 {
		t.Fatalf("after Reset anomalies %s", anomalyString(e.Anomalies()))
	}
	e.Path = "/x/../y"
	if got := e.NormPath(); got != "/y" {
		t.Fatalf("after a change NormPath = %q", got)
	}
	c := e.Clone()
	if got := c.NormPath(); got != "/y" {
		t.Fatalf("clone NormPath = %q", got)
	}
}

func TestNormAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	var e Event
	lines := []struct{ path, query, ua string }{
		{"/products/42", "", "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"},
		{"/search", "q=select+dining+chairs&page=2", "Mozilla/5.0"},
		{"/cgi-bin/.%2e/%2e%2e/bin/sh", "a=%27%20or%201=1", "%24%7Bjndi%7D"},
	}
	// Warm the buffers.
	for _, l := range lines {
		e.Reset()
		e.Path, e.Query, e.UserAgent = l.path, l.query, l.ua
		e.NormPath()
		e.NormQuery()
		e.NormUserAgent()
		e.Arg("q")
	}
	n := testing.AllocsPerRun(100, func() {
		for _, l := range lines {
			e.Reset()
			e.Path, e.Query, e.UserAgent = l.path, l.query, l.ua
			e.NormPath()
			e.NormQuery()
			e.NormUserAgent()
			e.NormReferer()
			e.Anomalies()
			e.Arg("q")
		}
	})
	if n != 0 {
		t.Fatalf("normalising allocates %v times per run, want 0", n)
	}
}

// FuzzNormPath checks that normalisation never panics, that its result is a
// clean path (no dot or empty segment, no backslash) when the input starts
// with '/', and that it agrees with path.Clean over url.PathUnescape for
// inputs without the oddities it handles beyond them.
func FuzzNormPath(f *testing.F) {
	for _, s := range []string{
		"/", "/a/b", "/%2e%2e/x", "/%252e%252e/x", "/a/..;/b", `/a\..\b`, "/%c0%ae%c0%ae/",
		"/%%32%65", "//x//y", "http://h/p", "/%u002e", "/a%00b", "/%ff", "/a/./b/../c/",
	} {
		f.Add(s, "q=1&b=%27")
	}
	f.Fuzz(func(t *testing.T, p, q string) {
		if len(p) > 4096 || len(q) > 4096 {
			return
		}
		e := &Event{Path: p, Query: q, UserAgent: q, Referer: p}
		got := e.NormPath()
		e.NormQuery()
		e.NormUserAgent()
		e.NormReferer()
		e.Arg("b")
		_ = e.Input()
		if !strings.HasPrefix(p, "/") {
			return
		}
		if !strings.HasPrefix(got, "/") {
			t.Fatalf("NormPath(%q) = %q: lost the leading slash", p, got)
		}
		if strings.Contains(got, "//") || strings.Contains(got, "/./") || strings.Contains(got, "/../") ||
			strings.HasSuffix(got, "/.") || strings.HasSuffix(got, "/..") {
			t.Fatalf("NormPath(%q) = %q: unresolved segment", p, got)
		}
		if strings.Contains(got, `\`) && utf8.ValidString(got) {
			t.Fatalf("NormPath(%q) = %q: backslash left", p, got)
		}
		// Inputs with nothing beyond one round of RFC 3986 decoding.
		if strings.ContainsAny(p, `\;`) || strings.Contains(p, "%u") || strings.Contains(p, "%U") {
			return
		}
		dec, err := url.PathUnescape(p)
		if err != nil || strings.Contains(dec, "%") || strings.ContainsAny(dec, "\\;\x00") || !utf8.ValidString(dec) {
			return
		}
		want := path.Clean(dec)
		if strings.HasSuffix(dec, "/") || strings.HasSuffix(dec, "/.") || strings.HasSuffix(dec, "/..") {
			if want != "/" {
				want += "/"
			}
		}
		if got != want {
			t.Fatalf("NormPath(%q) = %q, want %q (path.Clean)", p, got, want)
		}
	})
}

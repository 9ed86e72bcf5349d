package nginxlog

import (
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
)

// quirkBase is a combined line; each case of TestQuirks changes it the way a
// real log does.
const quirkBase = `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a?q=1 HTTP/1.1" 200 2326 "https://example.com/" "Mozilla/5.0 (X11) Firefox/125.0"`

type quirkCase struct {
	name, line           string
	path, query, ua, ref string
}

// quirkLines returns the lines of quirkCases, FuzzParse's seeds.
func quirkLines() []string {
	var out []string
	for _, c := range quirkCases() {
		out = append(out, c.line)
	}
	return out
}

// quirkCases are the format quirks of logs as published.
func quirkCases() []quirkCase {
	long := "/" + strings.Repeat("a", 64<<10-200)
	return []quirkCase{
		{name: "plain", line: quirkBase, path: "/a", query: "q=1", ua: "Mozilla/5.0 (X11) Firefox/125.0", ref: "https://example.com/"},
		{name: "trailing space", line: quirkBase + " ", path: "/a", query: "q=1", ua: "Mozilla/5.0 (X11) Firefox/125.0", ref: "https://example.com/"},
		{name: "trailing spaces and tab", line: quirkBase + "  \t", path: "/a", query: "q=1", ua: "Mozilla/5.0 (X11) Firefox/125.0", ref: "https://example.com/"},
		{name: "CR", line: quirkBase + "\r", path: "/a", query: "q=1", ua: "Mozilla/5.0 (X11) Firefox/125.0", ref: "https://example.com/"},
		{name: "space and CR", line: quirkBase + " \r", path: "/a", query: "q=1", ua: "Mozilla/5.0 (X11) Firefox/125.0", ref: "https://example.com/"},
		{
			name: "apache escaped quote in user agent",
			line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "-" "Mozilla/5.0 \"quoted\" Firefox/125.0"`,
			path: "/a",
			ua:   `Mozilla/5.0 "quoted" Firefox/125.0`,
		},
		{
			name: "apache escaped quote in request",
			line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a?x=\" HTTP/1.1" 200 2326 "-" "curl/8.0"`,
			path: "/a", query: `x="`, ua: "curl/8.0",
		},
		{
			name: "apache escaped quote then space in request",
			line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a?x=\"\" HTTP/1.1" 200 2326 "-" "curl/8.0"`,
			path: "/a", query: `x=""`, ua: "curl/8.0",
		},
		{
			name: "apache escaped quote in referer",
			line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "https://e.com/?q=\"x\" y" "curl/8.0"`,
			path: "/a", ua: "curl/8.0", ref: `https://e.com/?q="x" y`,
		},
		{
			name: "nginx escaped quote",
			line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a?x=\x22 HTTP/1.1" 200 2326 "\x22\x22" "a\x22b"`,
			path: "/a", query: `x="`, ua: `a"b`, ref: `""`,
		},
		{
			name: "raw bytes above 0x7F",
			line: "203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] \"GET /caf\xe9 HTTP/1.1\" 200 2326 \"-\" \"Mozilla/5.0 \xff\xfe\"",
			path: "/caf\xe9", ua: "Mozilla/5.0 \xff\xfe",
		},
		{
			name: "64 KB request line",
			line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET ` + long + ` HTTP/1.1" 200 2326 "-" "curl/8.0"`,
			path: long, ua: "curl/8.0",
		},
	}
}

// TestQuirks holds the format quirks of logs as published: each line parses
// to the fields a person reads in it.
func TestQuirks(t *testing.T) {
	f := MustCompile("combined")
	for _, c := range quirkCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, cache := range []*Cache{nil, new(Cache)} {
				var e characteristics.Event
				line := []byte(c.line)
				if err := f.ParseCache(line, &e, cache); err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if e.Path != c.path || e.Query != c.query || e.UserAgent != c.ua || e.Referer != c.ref {
					t.Errorf("got path %.40q query %q ua %q referer %q; want %.40q %q %q %q",
						e.Path, e.Query, e.UserAgent, e.Referer, c.path, c.query, c.ua, c.ref)
				}
			}
		})
	}
}

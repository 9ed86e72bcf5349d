package signature

import (
	"strings"
	"testing"
)

// TestScanCode holds the code shapes no fixed fragment finds: padded,
// split or commented payloads.
func TestScanCode(t *testing.T) {
	tests := []struct {
		in   string
		want Class
	}{
		{"(system)('uname');", PHPInjection},
		{"(sy.(st).em)('uname');", PHPInjection},
		{`"system"(ls);`, PHPInjection},
		{"[system][0](ls);", PHPInjection},
		{`( string ) "sys"."t"."em" ('uname');`, PHPInjection},
		{"[ system ] [ 0 ] ( ls );", PHPInjection},
		{"exec /*comment*/ ()", PHPInjection},
		{"subSTR($x)", PHPInjection},
		{"new Function (", NodeInjection},
		{"require.main.constructor._load(foo)", NodeInjection},
		{"cat /etc/pa[s]swd", CMDi},
		{"/[?]tc/pa[?]swd", CMDi},
		{"/usr/bin/[u]name -a", CMDi},
		{"$(whoami)", CMDi},
		{"${x#{}}", CMDi},
		{"  onload= ", XSSProbe},
		{`"onzoom=`, XSSProbe},
		{"<x onend=", XSSProbe},
		{"< x: script", XSSProbe},
		{"<f o r m", XSSProbe},
		{"<importimplementation=", XSSProbe},
		{"<!ENTITY x", XSSProbe},
		{"setInterval(code, 1)", XSSProbe},
		{"alert()", XSSProbe},
	}
	for _, tt := range tests {
		if m := Scan(tt.in); !m.Has(tt.want) {
			t.Errorf("Scan(%q) = %s, want %s", tt.in, names(m), tt.want)
		}
	}
	for _, s := range []string{
		"online=1", "if a<b then c", "a <= b", "x < 5", "price=10&sort=asc", "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101",
		"rate(http_requests_total[5m])", "items[0]=a", "f(x) = x^2", "(a)", "call me (maybe)",
		"/static/js/app.3f2a.js", "q=on sale=yes",
	} {
		if m := scanCode(s); m != 0 {
			t.Errorf("scanCode(%q) = %s, want none", s, names(m))
		}
	}
}

// TestScanQuery: arguments are decoded (twice, %u too) and kept apart by
// name; the query's shape is judged on the raw text.
func TestScanQuery(t *testing.T) {
	tests := []struct {
		q          string
		code, text Mask
	}{
		{"id=1&cmd=%253Bwget%2520http://x/", 1 << CMDi, 0},
		{"q=%3Cscript%3E+tags+tutorial", 0, 1 << XSSProbe},
		{"search=/etc/passwd&page=2", 0, 1 << LFI},
		{"expr=" + "union+select", 0, 1 << SQLiProbe},
		{"var-query=select+*+from+t", 0, 1 << SQLiProbe},
		{"a=%u0041", 1 << EncodingEvasion, 0},
		{"a=b%00", 1 << EncodingEvasion, 0},
		{"a=%c0%af", 1 << EncodingEvasion, 0},
		{"a=caf%E9", 1 << InvalidUTF8, 0},
		{"a=caf%C3%A9", 0, 0},
		{"a=" + strings.Repeat("A", 120), 1 << Overflow, 0},
		{strings.Repeat("x", 101) + "=1", 1 << Overflow, 0},
		{strings.Repeat("a=1&", 256), 1 << Overflow, 0},
		{"m=x&lt;script&gt;", 1 << XSSProbe, 0},
		{"foo=ti''me+sh+-c+id", 1 << CMDi, 0},
		{"test=%7C%24u%20wget%20test", 1 << CMDi, 0},
		{"c=w\\get+http://x/", 1 << CMDi, 0},
		{"price=%245+off&name=O''Brien", 0, 0},
	}
	for _, tt := range tests {
		if got := ScanQuery(tt.q); got != tt.code {
			t.Errorf("ScanQuery(%.60q) = %s, want %s", tt.q, names(got), names(tt.code))
		}
		if got := ScanQueryText(tt.q); got != tt.text {
			t.Errorf("ScanQueryText(%.60q) = %s, want %s", tt.q, names(got), names(tt.text))
		}
	}
	if !TextInjection("q=1'+or+'1'='1") || QuerySQLi("q=1'+or+'1'='1") {
		t.Error("a search box's injection is TextInjection's, not QuerySQLi's")
	}
}

func TestScanQueryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	for _, q := range []string{"id=1%27%20or%20%271%27=%271", "q=%253Cscript%253E&page=2", "a=%u9090%u6858", "plain=1&b=2", "c=w%5Cget+%24u+x"} {
		if n := testing.AllocsPerRun(50, func() { ScanQuery(q); ScanQueryText(q) }); n != 0 {
			t.Errorf("ScanQuery(%q) allocates %v", q, n)
		}
	}
}

func FuzzScanQuery(f *testing.F) {
	for _, s := range []string{"a=%u9090", "q=%253Cscript", "a=%c0%af&b", "&lt;x", "a=%", "%u12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > 4096 {
			return
		}
		ScanQuery(q)
		ScanQueryText(q)
		TextInjection(q)
		// Decoding in place never grows and agrees with decoding anew.
		b := []byte(q)
		if d := decodeInPlace(b, true); len(d) > len(q) {
			t.Fatalf("decodeInPlace(%q) grew to %q", q, d)
		}
	})
}

func BenchmarkScanQuery(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ScanQuery("id=1%27%20or%20%271%27=%271&page=2&sort=-price")
	}
}

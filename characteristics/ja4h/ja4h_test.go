package ja4h

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// emitted is one request as seen by emit, copied out.
type emitted struct {
	method, target, ja4h, raw string
}

func (e emitted) String() string {
	return fmt.Sprintf("method: %s\npath: %s\nja4h: %s\nja4h_r: %s\n", e.method, e.target, e.ja4h, e.raw)
}

// run feeds the chunks to a fresh Parser.
func run(chunks ...[]byte) (out []emitted, rest []byte, done bool) {
	var p Parser
	emit := func(r *Request) {
		j, raw := Fingerprint(r)
		out = append(out, emitted{string(r.Method), string(r.Target), j, raw})
	}
	for _, c := range chunks {
		if done {
			break
		}
		rest, done = p.Feed(c, emit)
	}
	return out, rest, done
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

const h1 = `GET /search?q=1 HTTP/1.1
Host: example.test
User-Agent: probe/2.0
Accept-Language: fr;q=0.9, en;q=0.8
Accept-Encoding: gzip
Referer: http://example.test/
Connection: keep-alive
Cookie: sid=abc; lang=fr; flag

`

// foxioRust is the request behind FoxIO's Rust unit test
// test_http_stats_into_out (the spec's appendix lists it).
const foxioRust = `GET / HTTP/1.1
Host: www.cnn.com
Cookie: FastAB=0=6859,1=8174,2=4183,3=3319,4=3917,5=2557,6=4259,7=6070,8=0804,9=6453,10=1942,11=4435,12=4143,13=9445,14=6957,15=8682,16=1885,17=1825,18=3760,19=0929; sato=1; countryCode=US; stateCode=VA; geoData=purcellville|VA|20132|US|NA|-400|broadband|39.160|-77.700|511; usprivacy=1---; umto=1; _dd_s=logs=1&id=b5c2d770-eaba-4847-8202-390c4552ff9a&created=1686159462724&expire=1686160422726
Sec-Ch-Ua: 
Sec-Ch-Ua-Mobile: ?0
User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/114.0.5735.110 Safari/537.36
Sec-Ch-Ua-Platform: ""
Accept: */*
Sec-Fetch-Site: same-origin
Sec-Fetch-Mode: cors
Sec-Fetch-Dest: empty
Sec-Fetch-Mode: cors
Sec-Fetch-Dest: empty
Referer: https://www.cnn.com/
Accept-Encoding: gzip, deflate
Accept-Language: en-US,en;q=0.9

`

func manyHeaders(n int) string {
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\n")
	for i := range n {
		fmt.Fprintf(&b, "X-H%d: v\n", i)
	}
	b.WriteString("cookie: a=1\nREFERER: x\n\n")
	return b.String()
}

type fpCase struct {
	name string
	req  string
	ja4h string // checked when set
	raw  string // checked when set
	a    string // part a, checked when set
}

func fpCases() []fpCase {
	return []fpCase{
		{name: "appendix_h1_lf", req: h1,
			ja4h: "ge11cr05fr00_4781048db574_22090eb1cea3_c136e875d446",
			raw:  "ge11cr05fr00_Host,User-Agent,Accept-Language,Accept-Encoding,Connection_lang,sid_lang=fr,sid=abc"},
		{name: "appendix_h1_crlf", req: crlf(h1), ja4h: "ge11cr05fr00_4781048db574_22090eb1cea3_c136e875d446"},
		{name: "foxio_rust_unit_test", req: crlf(foxioRust),
			ja4h: "ge11cr13enus_88d2d584d47f_0f2659b474bf_161698816dab"},
		{name: "no_headers", req: "GET / HTTP/1.0\r\n\r\n",
			ja4h: "ge10nn000000_e3b0c44298fc_000000000000_000000000000", raw: "ge10nn000000___"},
		{name: "lang_enus", req: "GET / HTTP/1.1\nAccept-Language: en-US,en;q=0.9\n\n", a: "ge11nn01enus"},
		{name: "lang_dede", req: "GET / HTTP/1.1\nAccept-Language: de-DE\n\n", a: "ge11nn01dede"},
		{name: "lang_fr00", req: "GET / HTTP/1.1\nAccept-Language: fr;q=0.8, en\n\n", a: "ge11nn01fr00"},
		{name: "lang_zhha", req: "GET / HTTP/1.1\nAccept-Language: zh-Hant-TW\n\n", a: "ge11nn01zhha"},
		{name: "lang_es34", req: "GET / HTTP/1.1\nAccept-Language: es-419\n\n", a: "ge11nn01es34"},
		{name: "lang_star", req: "GET / HTTP/1.1\nAccept-Language: *\n\n", a: "ge11nn012a00"},
		{name: "lang_first_header_wins", req: "GET / HTTP/1.1\naccept-language: de\nAccept-Language: en\n\n", a: "ge11nn02de00"},
		{name: "lang_empty", req: "GET / HTTP/1.1\nAccept-Language:\n\n", a: "ge11nn010000"},
		{name: "cookie_rules", req: "GET / HTTP/1.1\nCookie: b=2;a=1; novalue; ;c=\ncookie: a=0\n\n",
			raw: "ge11cn000000__a,a,b,c_a=0,a=1,b=2,c="},
		{name: "cookie_header_without_pairs", req: "GET / HTTP/1.1\nCookie: flag\n\n",
			ja4h: "ge11cn000000_e3b0c44298fc_000000000000_000000000000"},
		{name: "cookie_referer_case_insensitive", req: "GET / HTTP/1.1\nCOOKIE: a=1\nreferer: x\nHost: h\n\n",
			raw: "ge11cr01" + "0000_Host_a_a=1"},
		{name: "header_count_capped", req: manyHeaders(120), a: "ge11cr990000"},
		{name: "duplicate_headers_kept", req: "GET / HTTP/1.1\nAccept: a\nAccept: b\n\n", raw: "ge11nn020000_Accept,Accept__"},
		{name: "names_raw_case", req: "GET / HTTP/1.1\nhOsT: a\nX-Ünïcode: b\n\n", raw: "ge11nn020000_hOsT,X-Ünïcode__"},
		{name: "unknown_method", req: "FROB / HTTP/1.1\n\n", a: "0011nn000000"},
		{name: "method_case_insensitive", req: "post / HTTP/1.1\n\n", a: "po11nn000000"},
		{name: "m_search", req: "M-SEARCH * HTTP/1.1\nHOST: 239.255.255.250:1900\nMAN: \"ssdp:discover\"\n\n", a: "ms11nn020000"},
		{name: "spaces_in_target", req: "GET /a b c HTTP/1.1\n\n", a: "ge11nn000000"},
	}
}

func TestFingerprint(t *testing.T) {
	tests := fpCases()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, _ := run([]byte(tt.req))
			if len(out) != 1 {
				t.Fatalf("%d requests emitted, want 1", len(out))
			}
			got := out[0]
			if tt.ja4h != "" && got.ja4h != tt.ja4h {
				t.Errorf("ja4h = %s, want %s", got.ja4h, tt.ja4h)
			}
			if tt.raw != "" && got.raw != tt.raw {
				t.Errorf("ja4h_r = %s, want %s", got.raw, tt.raw)
			}
			if tt.a != "" && got.ja4h[:12] != tt.a {
				t.Errorf("part a = %s, want %s", got.ja4h[:12], tt.a)
			}
			if got.raw[:12] != got.ja4h[:12] {
				t.Errorf("part a differs between ja4h and ja4h_r")
			}
			checkGolden(t, tt.name, []byte(got.String()))
		})
	}
}

func TestMethodTable(t *testing.T) {
	for m, want := range map[string]string{
		"GET": "ge", "PUT": "pu", "POST": "po", "PURGE": "pr", "PRI": "pr", "UNLINK": "ui", "VERSION-CONTROL": "ve",
		"BASELINE-CONTROL": "ba", "UPDATEREDIRECTREF": "ur", "connect": "co", "FOO": "00", "": "00",
		strings.Repeat("A", 40): "00",
	} {
		if got := MethodCode([]byte(m)); got != want {
			t.Errorf("MethodCode(%q) = %s, want %s", m, got, want)
		}
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got: %s\nwant: %s", path, got, want)
	}
}

func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

func lines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func TestParser(t *testing.T) {
	pipelined := crlf("POST /a HTTP/1.1\nHost: h\nContent-Length: 24\n\n") + "GET /evil HTTP/1.1\r\n\r\nxx" +
		crlf("PUT /b HTTP/1.1\nTransfer-Encoding: gzip, chunked\n\n") +
		"5;ext=1\r\nhello\r\n1a\r\nGET /evil2 HTTP/1.1\r\n\r\n12\r\n0\r\nTrailer: x\r\n\r\n" +
		crlf("GET /c HTTP/1.1\nHost: h\n\n")
	tests := []struct {
		name     string
		stream   string
		targets  []string
		wantDone bool
		wantRest string
	}{
		{"pipelined bodies", pipelined, []string{"/a", "/b", "/c"}, false, ""},
		{"keep-alive with leading empty lines", "GET /1 HTTP/1.1\n\n\r\nGET /2 HTTP/1.0\n\n", []string{"/1", "/2"}, false, ""},
		{"bare LF", "GET /lf HTTP/1.1\nHost: h\n\n", []string{"/lf"}, false, ""},
		{"incomplete block emits nothing", "GET /x HTTP/1.1\nHost: h\n", nil, false, ""},
		{"connect returns rest", "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n\x16\x03\x01\x00\x05", []string{"example.test:443"}, true, "\x16\x03\x01\x00\x05"},
		{"tls at a boundary stops", "GET / HTTP/1.1\r\n\r\n\x16\x03\x01\x02\x00\x01", []string{"/"}, true, ""},
		{"h2c preface stops", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", nil, true, ""},
		{"websocket frames stop", "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n\x81\x85abcd", []string{"/ws"}, true, ""},
		{"bad content-length stops", "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\nGET / HTTP/1.1\r\n\r\n", []string{"/"}, true, ""},
		{"bad chunk size stops", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", []string{"/"}, true, ""},
		{"version must be 1.x", "GET / HTTP/2\r\n\r\n", nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.stream)
			for shape, chunks := range map[string][][]byte{
				"one shot":        {b},
				"line per feed":   lines(b),
				"byte per feed":   bytewise(b),
				"split in middle": {b[:len(b)/2], b[len(b)/2:]},
			} {
				out, rest, done := run(chunks...)
				var targets []string
				for _, e := range out {
					targets = append(targets, e.target)
				}
				if fmt.Sprint(targets) != fmt.Sprint(tt.targets) {
					t.Errorf("%s: targets %q, want %q", shape, targets, tt.targets)
				}
				if done != tt.wantDone {
					t.Errorf("%s: done = %v, want %v", shape, done, tt.wantDone)
				}
				if shape == "one shot" && string(rest) != tt.wantRest {
					t.Errorf("%s: rest = %q, want %q", shape, rest, tt.wantRest)
				}
			}
		})
	}
}

func TestFolding(t *testing.T) {
	var got []string
	var p Parser
	p.Feed([]byte("GET / HTTP/1.1\r\nX-A: one\r\n  two\r\n\tthree\r\nX-B:\r\n four\r\nAccept-Language:\r\n de-DE\r\n\r\n"), func(r *Request) {
		for _, h := range r.Headers {
			got = append(got, string(h.Name)+"="+string(h.Value))
		}
		if j, _ := Fingerprint(r); j[8:12] != "dede" {
			t.Errorf("folded Accept-Language gives %s", j[8:12])
		}
	})
	want := "[X-A=one two three X-B=four Accept-Language=de-DE]"
	if fmt.Sprint(got) != want {
		t.Errorf("headers %v, want %s", got, want)
	}
}

func TestHeaderCap(t *testing.T) {
	var p Parser
	big := "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHeaderBlock) + "\r\n\r\n"
	_, done := p.Feed([]byte(big), func(*Request) { t.Error("emitted an oversized block") })
	if !done {
		t.Error("not done after an oversized block")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		in           string
		isHTTP, need bool
	}{
		{"GET / HTTP/1.1\r\n", true, false},
		{"GET / HTTP/1.1\n", true, false},
		{"GE", false, true},
		{"GET /long-path-without-end", false, true},
		{"\x16\x03\x01", false, false},
		{"PRI * HTTP/2.0\r\n", false, false},
		{"GET / HTTP/1.1x\r\n", false, false},
		{"G(T / HTTP/1.1\r\n", false, false},
		{"", false, true},
	}
	for _, tt := range tests {
		isHTTP, need := Classify([]byte(tt.in))
		if isHTTP != tt.isHTTP || need != tt.need {
			t.Errorf("Classify(%q) = %v, %v; want %v, %v", tt.in, isHTTP, need, tt.isHTTP, tt.need)
		}
		if LooksLikeRequestLine([]byte(tt.in)) != tt.isHTTP {
			t.Errorf("LooksLikeRequestLine(%q)", tt.in)
		}
	}
}

func TestParserNoAllocs(t *testing.T) {
	req := []byte(crlf(h1))
	var p Parser
	emit := func(*Request) {}
	p.Feed(req, emit)
	if allocs := testing.AllocsPerRun(100, func() {
		p.Feed(req[:40], emit)
		p.Feed(req[40:], emit)
	}); allocs != 0 {
		t.Errorf("Parser.Feed allocates %.1f times per request, want 0", allocs)
	}
	var r *Request
	p.Reset()
	p.Feed(req, func(x *Request) {
		if allocs := testing.AllocsPerRun(100, func() { _, _ = Fingerprint(x) }); allocs > 2 {
			t.Errorf("Fingerprint allocates %.1f times, want <= 2", allocs)
		}
		r = x
	})
	if r == nil {
		t.Fatal("no request")
	}
}

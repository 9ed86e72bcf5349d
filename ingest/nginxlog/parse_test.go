package nginxlog

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
)

const customDirective = `log_format custom '$remote_addr $remote_port - $remote_user [$time_local] '
                  '"$request" $status $body_bytes_sent "$http_referer" '
                  '"$http_user_agent" $request_time "$http_x_forwarded_for" '
                  '"$cookie_session" $ssl_protocol $upstream_response_time';`

const jsonDirective = `log_format j escape=json
    '{"ip":"$remote_addr","port":"$remote_port","time":"$time_iso8601",'
    '"req":"$request","status":$status,"ua":"$http_user_agent",'
    '"host":"$http_host","cookie":"$http_cookie","ms":$msec}';`

const noneDirective = `log_format raw escape=none '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"';`

var testFormats = map[string]string{
	"combined": "combined",
	"custom":   customDirective,
	"json":     jsonDirective,
	"none":     noneDirective,
	"hosts":    `$host|$server_name|$http_host|$uri|$args|$request_method|$server_protocol|$bytes_sent|$ssl_server_name|$ssl_alpn_protocol|$ssl_ja3|$ssl_ja3_hash|$ssl_ja4|$msec`,
	"uri":      `$remote_addr $request_method $request_uri $server_protocol $status`,
	"times":    `$msec [$time_local] $time_iso8601`,
}

func mustFormat(t testing.TB, name string) *Format {
	t.Helper()
	f, err := Compile(testFormats[name])
	if err != nil {
		t.Fatalf("Compile(%s): %v", name, err)
	}
	return f
}

type parseCase struct {
	name, format, line string
	want               view
	err                string // substring of the error, "" for none
}

var parseCases = []parseCase{
	{
		name: "combined", format: "combined",
		line: `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1&y=2 HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"`,
		want: view{Time: "2000-10-10T20:55:36Z", IP: "203.0.113.7", Method: "GET", Path: "/apache_pb.gif", Query: "x=1&y=2",
			Protocol: "HTTP/1.0", Status: 200, BytesSent: 2326, Referer: "http://www.example.com/start.html",
			UserAgent: "Mozilla/4.08 [en] (Win98; I ;Nav)",
			Headers:   []string{"referer: http://www.example.com/start.html", "user-agent: Mozilla/4.08 [en] (Win98; I ;Nav)"}},
	},
	{
		name: "ipv6", format: "combined",
		line: `2001:db8::7 - alice [01/Jan/2024:00:00:00 +0000] "POST /login HTTP/2.0" 401 0 "-" "curl/8.5.0"`,
		want: view{Time: "2024-01-01T00:00:00Z", IP: "2001:db8::7", Method: "POST", Path: "/login", Protocol: "HTTP/2.0",
			Status: 401, UserAgent: "curl/8.5.0", Headers: []string{"user-agent: curl/8.5.0"}, Vars: []string{"remote_user=alice"}},
	},
	{
		name: "ipv4-mapped", format: "combined",
		line: `::ffff:192.0.2.1 - - [29/Feb/2024:23:59:59 +0530] "GET / HTTP/1.1" 304 0 "-" "-"`,
		want: view{Time: "2024-02-29T18:29:59Z", IP: "192.0.2.1", Method: "GET", Path: "/", Protocol: "HTTP/1.1", Status: 304},
	},
	{
		name: "escapes", format: "combined",
		line: `192.0.2.9 - - [10/Oct/2000:13:55:36 +0000] "GET /caf\xC3\xA9?q=\x22x\x22 HTTP/1.1" 200 5 "-" "ua \x22quoted\x22 back\x5Cslash \x09tab \xZZ kept"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "192.0.2.9", Method: "GET", Path: "/café", Query: `q="x"`, Protocol: "HTTP/1.1",
			Status: 200, BytesSent: 5, UserAgent: "ua \"quoted\" back\\slash \ttab \\xZZ kept",
			Headers: []string{"user-agent: ua \"quoted\" back\\slash \ttab \\xZZ kept"}},
	},
	{
		name: "tls-handshake-as-request", format: "combined",
		line: `198.51.100.3 - - [10/Oct/2000:13:55:36 +0000] "\x16\x03\x01\x00\xA5\x01\x00\x00\xA1\x03\x03" 400 157 "-" "-"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "198.51.100.3", Status: 400, BytesSent: 157,
			Vars: []string{"request=\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"}},
	},
	{
		name: "request-dash", format: "combined",
		line: `198.51.100.3 - - [10/Oct/2000:13:55:36 +0000] "-" 400 0 "-" "-"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "198.51.100.3", Status: 400, Vars: []string{"request=-"}},
	},
	{
		name: "http09", format: "combined",
		line: `198.51.100.3 - - [10/Oct/2000:13:55:36 +0000] "GET /" 200 10 "-" "-"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "198.51.100.3", Method: "GET", Path: "/", Status: 200, BytesSent: 10},
	},
	{
		name: "remote-user-with-spaces", format: "combined",
		line: `198.51.100.3 - a b [c [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 10 "-" "-"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "198.51.100.3", Method: "GET", Path: "/", Protocol: "HTTP/1.1",
			Status: 200, BytesSent: 10, Vars: []string{"remote_user=a b [c"}},
	},
	{
		name: "unix-socket", format: "combined",
		line: `unix: - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 10 "-" "-"`,
		want: view{Time: "2000-10-10T13:55:36Z", Method: "GET", Path: "/", Protocol: "HTTP/1.1",
			Status: 200, BytesSent: 10, Vars: []string{"remote_addr=unix:"}},
	},
	{
		name: "none-quote-in-last-field", format: "none",
		line: `192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "evil" "ua"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "192.0.2.1", Method: "GET", Path: "/", Protocol: "HTTP/1.1",
			Status: 200, BytesSent: 1, UserAgent: `evil" "ua`, Headers: []string{`user-agent: evil" "ua`}},
	},
	{
		name: "none-quote-in-request", format: "none",
		line: `192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a" 9 b HTTP/1.1" 200 1 "-" "x"`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "192.0.2.1", Method: "GET", Path: `/a" 9 b`, Protocol: "HTTP/1.1",
			Status: 200, BytesSent: 1, UserAgent: "x", Headers: []string{"user-agent: x"}},
	},
	{
		name: "none-raw-bytes", format: "none",
		line: "192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] \"GET /\\x41 HTTP/1.1\" 200 1 \"-\" \"\xff\"",
		want: view{Time: "2000-10-10T13:55:36Z", IP: "192.0.2.1", Method: "GET", Path: `/\x41`, Protocol: "HTTP/1.1",
			Status: 200, BytesSent: 1, UserAgent: "\xff", Headers: []string{"user-agent: \xff"}},
	},
	{
		name: "custom", format: "custom",
		line: `192.0.2.44 51234 - - [10/Oct/2000:13:55:36 +0000] "GET /cart?id=7 HTTP/1.1" 200 512 "-" "Mozilla/5.0" 0.042 "203.0.113.9, 10.0.0.1" "s3ss10n" TLSv1.3 0.040, 0.001 : 0.002`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "192.0.2.44", Port: 51234, Method: "GET", Path: "/cart", Query: "id=7",
			Protocol: "HTTP/1.1", Status: 200, BytesSent: 512, RequestTime: 0.042, UserAgent: "Mozilla/5.0",
			Headers: []string{"user-agent: Mozilla/5.0", "x-forwarded-for: 203.0.113.9, 10.0.0.1"},
			Cookies: []string{"session=s3ss10n"},
			Vars:    []string{"ssl_protocol=TLSv1.3", "upstream_response_time=0.040, 0.001 : 0.002"}},
	},
	{
		name: "custom-absent", format: "custom",
		line: `192.0.2.44 51234 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 499 0 "-" "-" 1.000 "-" "-" - -`,
		want: view{Time: "2000-10-10T13:55:36Z", IP: "192.0.2.44", Port: 51234, Method: "GET", Path: "/",
			Protocol: "HTTP/1.1", Status: 499, RequestTime: 1},
	},
	{
		name: "json-escape", format: "json",
		line: `{"ip":"2001:db8::1","port":"443","time":"2024-05-01T12:00:00.250+02:00","req":"GET /a\"b?c=\\d HTTP/2.0","status":429,"ua":"x\ty\u0001z\u00e9","host":"example.com","cookie":"a=1; b = 2 ;c","ms":1714557600.250}`,
		want: view{Time: "2024-05-01T10:00:00.25Z", IP: "2001:db8::1", Port: 443, Method: "GET", Path: `/a"b`, Query: `c=\d`,
			Protocol: "HTTP/2.0", Status: 429, Host: "example.com", UserAgent: "x\ty\x01zé",
			Headers: []string{"user-agent: x\ty\x01zé", "host: example.com", "cookie: a=1; b = 2 ;c"},
			Cookies: []string{"a=1", "b=2", "c="}},
	},
	{
		name: "json-empty-is-absent", format: "json",
		line: `{"ip":"192.0.2.1","port":"","time":"2024-05-01T12:00:00Z","req":"","status":200,"ua":"","host":"","cookie":"","ms":1714564800.000}`,
		want: view{Time: "2024-05-01T12:00:00Z", IP: "192.0.2.1", Status: 200, Vars: []string{"request="}},
	},
	{
		name: "hosts-and-tls", format: "hosts",
		line: `h.example|srv|hh.example|/u|a=1|PUT|HTTP/1.1|99|sni.example|h2|771,4865-4866,0-23,29-23,0|e7d705a3286e19ea42f587b344ee6865|t13d1516h2_8daaf6152771_b0da82dd1658|1700000000.5`,
		want: view{Time: "2023-11-14T22:13:20.5Z", Host: "hh.example", Method: "PUT", Path: "/u", Query: "a=1", Protocol: "HTTP/1.1",
			BytesSent: 99, SNI: "sni.example", ALPN: "h2", JA3: "e7d705a3286e19ea42f587b344ee6865", JA4: "t13d1516h2_8daaf6152771_b0da82dd1658",
			Headers: []string{"host: hh.example"}},
	},
	{
		name: "request-uri", format: "uri",
		line: `192.0.2.1 GET /p?q=1 HTTP/1.1 200`,
		want: view{IP: "192.0.2.1", Method: "GET", Path: "/p", Query: "q=1", Protocol: "HTTP/1.1", Status: 200},
	},
	{
		name: "msec-wins", format: "times",
		line: `971186136.250 [10/Oct/2000:13:55:37 +0000] 2000-10-10T13:55:38+00:00`,
		want: view{Time: "2000-10-10T13:55:36.25Z"},
	},
	{
		name: "iso-wins-over-local", format: "times",
		line: `- [10/Oct/2000:13:55:37 +0000] 2000-10-10T13:55:38+00:00`,
		want: view{Time: "2000-10-10T13:55:38Z"},
	},

	{name: "bad-address", format: "combined", err: `$remote_addr at byte 0: want an IPv4 or IPv6 address, got "999.1.1.1"`,
		line: `999.1.1.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`},
	{name: "bad-status", format: "combined", err: `$status at byte 60: want an HTTP status code, got "2000"`,
		line: `192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 2000 1 "-" "-"`},
	{name: "status-not-number", format: "combined", err: `$status at byte 60: want an HTTP status code, got "abc"`,
		line: `192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" abc 1 "-" "-"`},
	{name: "bad-month", format: "combined", err: `$time_local at byte 15: want a time like 10/Oct/2000:13:55:36 -0700`,
		line: `192.0.2.1 - - [10/Foo/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`},
	{name: "bad-day", format: "combined", err: `$time_local`,
		line: `192.0.2.1 - - [30/Feb/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`},
	{name: "cut-line", format: "combined", err: `want a value ended by '" '`,
		line: `192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTT`},
	{name: "extra-field", format: "combined", err: `$http_user_agent at byte 71: want no raw '"' with escape=default`,
		line: `192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "curl" "203.0.113.1"`},
	{name: "empty", format: "combined", err: `$remote_addr at byte 0: want a value ended by ' - '`, line: ``},
	{name: "json-wrong-start", format: "json", err: `byte 0: want literal '{"ip":"' at the start`, line: `192.0.2.1 - -`},
	{name: "bad-port", format: "custom", err: `$remote_port at byte 11: want a port number, got "70000"`,
		line: `192.0.2.44 70000 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 0 "-" "-" 1.000 "-" "-" - -`},
	{name: "bad-request-time", format: "custom", err: `$request_time at byte 80: want seconds like 0.123, got "1.2.3"`,
		line: `192.0.2.44 7000 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 0 "-" "-" 1.2.3 "-" "-" - -`},
	{name: "bad-msec", format: "hosts", err: `$msec at byte`,
		line: `h|s|hh|/u|a|PUT|HTTP/1.1|99|s|h2|-|-|-|17e9`},
}

func TestParse(t *testing.T) {
	formats := map[string]*Format{}
	for name := range testFormats {
		formats[name] = mustFormat(t, name)
	}
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			var e characteristics.Event
			err := formats[tc.format].Parse([]byte(tc.line), &e)
			if tc.err != "" {
				var fe *FieldError
				if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error = %v, want a *FieldError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if e.Source != characteristics.SourceNginxLog {
				t.Errorf("Source = %v", e.Source)
			}
			if got := viewOf(&e); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestParseReuse parses a line into an Event that held another one: nothing of
// the first may remain.
func TestParseReuse(t *testing.T) {
	f := mustFormat(t, "custom")
	var e characteristics.Event
	full := parseCases[12] // custom
	if err := f.Parse([]byte(full.line), &e); err != nil {
		t.Fatal(err)
	}
	absent := parseCases[13]
	if err := f.Parse([]byte(absent.line), &e); err != nil {
		t.Fatal(err)
	}
	if got := viewOf(&e); !reflect.DeepEqual(got, absent.want) {
		t.Errorf("after reuse\n got %v\nwant %v", got, absent.want)
	}
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name, in string
		vars     []string
		text     string
		esc      Escape
		err      string
	}{
		{name: "combined", in: " combined\n", text: Combined,
			vars: []string{"remote_addr", "remote_user", "time_local", "request", "status", "body_bytes_sent", "http_referer", "http_user_agent"}},
		{name: "directive-combined", in: "log_format combined;", text: Combined,
			vars: []string{"remote_addr", "remote_user", "time_local", "request", "status", "body_bytes_sent", "http_referer", "http_user_agent"}},
		{name: "bare", in: `$remote_addr [$time_local] ${status}x`, text: `$remote_addr [$time_local] ${status}x`,
			vars: []string{"remote_addr", "time_local", "status"}},
		{name: "upper-case-names", in: `$Remote_Addr $HTTP_X_Real_IP`, text: `$Remote_Addr $HTTP_X_Real_IP`,
			vars: []string{"remote_addr", "http_x_real_ip"}},
		{name: "directive-multiline", in: "log_format  main  escape=json\n\t'{\"ip\":\"$remote_addr\",' # client\n\t\"\\\"port\\\":\\\"$remote_port\\\"}\";\n",
			text: `{"ip":"$remote_addr","port":"$remote_port"}`, esc: EscapeJSON, vars: []string{"remote_addr", "remote_port"}},
		{name: "directive-none", in: `log_format x escape=none '$a|$b';`, text: `$a|$b`, esc: EscapeNone, vars: []string{"a", "b"}},
		{name: "directive-cut-short", in: "log_format x '$a $b'\n  '$c'", err: "no ';' at the end, so the directive may be cut short"},

		{name: "bare-trailing-newline", in: "$remote_addr [$time_local] \n", text: `$remote_addr [$time_local] `,
			vars: []string{"remote_addr", "time_local"}},
		{name: "line-break", in: "$remote_addr\n$status", err: "byte 12: a line break in the format"},
		{name: "adjacent", in: `$remote_addr$remote_port`, err: "byte 12: $remote_port follows $remote_addr with no literal text between them"},
		{name: "dollar-alone", in: `$remote_addr $ x`, err: "byte 13: '$' not followed by a variable name"},
		{name: "unterminated-brace", in: `$remote_addr ${status`, err: "byte 13: unterminated ${"},
		{name: "bad-brace-name", in: `${a-b} x`, err: `invalid variable name "a-b"`},
		{name: "no-variables", in: `just text`, err: "has no variables"},
		{name: "empty", in: " ", err: "empty log format"},
		{name: "bad-escape", in: `log_format x escape=xml '$a';`, err: `unknown escape "xml"; want default, json or none`},
		{name: "no-string", in: `log_format main;`, err: "log_format main: no format string"},
		{name: "unterminated-quote", in: `log_format main '$a`, err: "unterminated '-quoted string"},
		{name: "unterminated-quote-semicolon", in: `log_format main '$a;`, err: "unterminated '-quoted string"},
		{name: "grep-A3", in: "log_format main '$a - $b'\n  ' \"$c\"';\naccess_log /var/log/nginx/access.log main;\n}", text: `$a - $b "$c"`,
			vars: []string{"a", "b", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Compile error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if f.String() != tc.text || f.Escape() != tc.esc || !reflect.DeepEqual(f.Variables(), tc.vars) {
				t.Errorf("Compile = %q %v %q, want %q %v %q", f.String(), f.Escape(), f.Variables(), tc.text, tc.esc, tc.vars)
			}
		})
	}
}

func TestHeaderNames(t *testing.T) {
	f, err := Compile(`$http_X_Forwarded_For|$cookie_SID|$http_cookie|$realip_remote_addr`)
	if err != nil {
		t.Fatal(err)
	}
	var e characteristics.Event
	if err := f.Parse([]byte(`198.51.100.1|abc|SID=abc; theme=dark|10.0.0.1`), &e); err != nil {
		t.Fatal(err)
	}
	want := view{Headers: []string{"x-forwarded-for: 198.51.100.1", "cookie: SID=abc; theme=dark"},
		Cookies: []string{"sid=abc", "SID=abc", "theme=dark"}, Vars: []string{"realip_remote_addr=10.0.0.1"}}
	if got := viewOf(&e); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestTimes(t *testing.T) {
	tests := []struct {
		name, in string
		parse    func([]byte) (time.Time, bool)
		want     string // RFC 3339, "" for an error
	}{
		{"local", "10/Oct/2000:13:55:36 -0700", parseTimeLocal, "2000-10-10T20:55:36Z"},
		{"local-plus", "01/Jan/2000:00:30:00 +0100", parseTimeLocal, "1999-12-31T23:30:00Z"},
		{"local-leap", "29/Feb/2000:12:00:00 +0000", parseTimeLocal, "2000-02-29T12:00:00Z"},
		{"local-not-leap", "29/Feb/1900:12:00:00 +0000", parseTimeLocal, ""},
		{"local-dec", "31/Dec/2099:23:59:59 +0000", parseTimeLocal, "2099-12-31T23:59:59Z"},
		{"local-hour", "10/Oct/2000:24:00:00 +0000", parseTimeLocal, ""},
		{"local-zone", "10/Oct/2000:13:55:36 +07", parseTimeLocal, ""},
		{"local-zone-sign", "10/Oct/2000:13:55:36 07000", parseTimeLocal, ""},
		{"local-lower-month", "10/oct/2000:13:55:36 +0000", parseTimeLocal, ""},
		{"iso", "2000-10-10T13:55:36-07:00", parseTimeISO, "2000-10-10T20:55:36Z"},
		{"iso-z", "2000-10-10T13:55:36Z", parseTimeISO, "2000-10-10T13:55:36Z"},
		{"iso-frac", "2000-10-10T13:55:36.123456789+00:00", parseTimeISO, "2000-10-10T13:55:36.123456789Z"},
		{"iso-ms-compact-zone", "2000-10-10T13:55:36.5+0200", parseTimeISO, "2000-10-10T11:55:36.5Z"},
		{"iso-bad-frac", "2000-10-10T13:55:36.Z", parseTimeISO, ""},
		{"iso-month", "2000-13-10T13:55:36Z", parseTimeISO, ""},
		{"iso-trailing", "2000-10-10T13:55:36Zx", parseTimeISO, ""},
		{"msec", "1700000000.123", parseMsec, "2023-11-14T22:13:20.123Z"},
		{"msec-int", "0", parseMsec, "1970-01-01T00:00:00Z"},
		{"msec-ns", "1.000000001", parseMsec, "1970-01-01T00:00:01.000000001Z"},
		{"msec-neg", "-1.5", parseMsec, ""},
		{"msec-dot", "17.", parseMsec, ""},
		{"msec-long", "1234567890123.1", parseMsec, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.parse([]byte(tc.in))
			if tc.want == "" {
				if ok {
					t.Fatalf("parsed %q as %v, want an error", tc.in, got)
				}
				return
			}
			if !ok || got.Format(time.RFC3339Nano) != tc.want || got.Location() != time.UTC {
				t.Fatalf("parse(%q) = %v, %v; want %s UTC", tc.in, got, ok, tc.want)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
	tests := []struct{ name, in, def, json string }{
		{"plain", "abc", "abc", "abc"},
		{"hex", `a\x22b\x5C\x00`, "a\"b\\\x00", `a\x22b\x5C\x00`},
		{"bad-hex", `\xG1\x4`, `\xG1\x4`, `\xG1\x4`},
		{"json", `\"\\\/\b\f\n\r\t\u0041\u00e9`, `"\\/\b\f\n\r\t\u0041\u00e9`, "\"\\/\b\f\n\r\t" + "Aé"},
		{"surrogates", `\ud83d\ude00|\ud83d|\ude00x`, `\ud83d\ude00|\ud83d|\ude00x`, "😀|\uFFFD|\uFFFDx"},
		{"json-bad", `\q\u12\`, `\q\u12\`, `\q\u12\`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(unescapeDefault([]byte(tc.in))); got != tc.def {
				t.Errorf("unescapeDefault(%q) = %q, want %q", tc.in, got, tc.def)
			}
			if got := string(unescapeJSON([]byte(tc.in))); got != tc.json {
				t.Errorf("unescapeJSON(%q) = %q, want %q", tc.in, got, tc.json)
			}
		})
	}
}

func TestRequestTime(t *testing.T) {
	for _, s := range []string{"0", "0.000", "0.001", "1.5", "12.345", "999999.999", "123456789012345"} {
		got, ok := parseSeconds([]byte(s))
		want, _ := strconv.ParseFloat(s, 64)
		if !ok || got != want {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", ".", ".5", "1.", "1e3", "-1", "1234567890123456", "1.2.3"} {
		if got, ok := parseSeconds([]byte(s)); ok {
			t.Errorf("parseSeconds(%q) = %v, want an error", s, got)
		}
	}
}

func TestLineError(t *testing.T) {
	f := MustCompile("combined")
	var e characteristics.Event
	err := f.Parse([]byte(`nope`), &e)
	le := &LineError{File: "access.log", Line: 1234, Err: err}
	want := `access.log:1234: nginxlog: $remote_addr at byte 0: want a value ended by ' - ', got "nope"`
	if le.Error() != want {
		t.Errorf("Error() = %q\nwant %q", le.Error(), want)
	}
	var fe *FieldError
	if !errors.As(le, &fe) || fe.Var != "remote_addr" {
		t.Errorf("errors.As(LineError, *FieldError) = %v", fe)
	}
}

func TestParseAllocs(t *testing.T) {
	f := MustCompile("combined")
	line := []byte(parseCases[0].line)
	buf := make([]byte, len(line))
	var e characteristics.Event
	n := testing.AllocsPerRun(1000, func() {
		copy(buf, line)
		if err := f.Parse(buf, &e); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Parse(combined) allocates %v times per line, want 0", n)
	}
	jline := []byte(jsonLineCases[0].line)
	jbuf := make([]byte, len(jline))
	n = testing.AllocsPerRun(1000, func() {
		copy(jbuf, jline)
		if err := ParseJSON(jbuf, &e); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("ParseJSON allocates %v times per line, want 0", n)
	}
}

// TestParseManyVariables parses a format with more variables than Parse keeps
// on its stack, without allocating.
func TestParseManyVariables(t *testing.T) {
	var fs, ls []string
	for i := range 100 {
		fs = append(fs, "$v"+strconv.Itoa(i))
		ls = append(ls, strconv.Itoa(i))
	}
	f, err := Compile(strings.Join(fs, "|"))
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Join(ls, "|"))
	var e characteristics.Event
	n := testing.AllocsPerRun(100, func() {
		if err := f.Parse(line, &e); err != nil {
			t.Fatal(err)
		}
	})
	if len(e.Vars) != 100 || e.Vars[99] != (characteristics.Field{Name: "v99", Value: "99"}) {
		t.Fatalf("Vars = %v", e.Vars)
	}
	if n != 0 {
		t.Errorf("Parse allocates %v times per line", n)
	}
}

// TestParseConcurrent uses one Format from several goroutines, as the replay
// workers do; run with -race.
func TestParseConcurrent(t *testing.T) {
	f := mustFormat(t, "combined")
	var cases []parseCase
	for _, tc := range parseCases {
		if tc.format == "combined" && tc.err == "" {
			cases = append(cases, tc)
		}
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var e characteristics.Event
			for i := range 200 {
				tc := cases[(g+i)%len(cases)]
				if err := f.Parse([]byte(tc.line), &e); err != nil {
					done <- err
					return
				}
				if got := viewOf(&e); !reflect.DeepEqual(got, tc.want) {
					done <- errors.New(tc.name + ": " + got.String())
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestParseAdversarial feeds lines built to make the splitter backtrack; their
// cost is in BenchmarkParseAdversarial.
func TestParseAdversarial(t *testing.T) {
	f := mustFormat(t, "combined")
	var e characteristics.Event
	user := strings.Repeat("a [", 3000)
	line := `192.0.2.1 - ` + user + ` [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`
	if err := f.Parse([]byte(line), &e); err == nil {
		t.Errorf("a remote_user with 3000 false literals parsed, want an error after the split budget")
	}
	short := `192.0.2.1 - a [b [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`
	if err := f.Parse([]byte(short), &e); err != nil {
		t.Errorf("Parse(%q) = %v", short, err)
	} else if u, _ := e.Var("remote_user"); u != "a [b" {
		t.Errorf("remote_user = %q", u)
	}
}

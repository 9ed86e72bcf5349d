package nginxlog

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// maxFuzzLine caps fuzz inputs: the parser is linear in the line, so longer
// inputs only slow the fuzzer down.
const maxFuzzLine = 4096

// fuzzFormats are the formats FuzzParse runs every input through; the first
// three are round-tripped.
var fuzzFormats = []string{"combined", "custom", "json", "none", "hosts", "uri"}

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.line))
	}
	for _, q := range quirkLines() {
		if len(q) <= maxFuzzLine {
			f.Add([]byte(q))
		}
	}
	logs, _ := filepath.Glob("testdata/*.log")
	for _, path := range logs {
		data, _ := os.ReadFile(path)
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line)
		}
	}
	formats := make([]*Format, len(fuzzFormats))
	for i, name := range fuzzFormats {
		formats[i] = mustFormat(f, name)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzLine {
			return
		}
		var e characteristics.Event
		buf := make([]byte, len(data))
		for _, fm := range formats {
			copy(buf, data)
			_ = fm.Parse(buf, &e) // must not panic
		}
		// Blanks after the line's end change nothing when the format ends in
		// a quote or a brace: a line that parses parses the same with a space
		// and a CR after it.
		for _, fm := range []*Format{formats[0], formats[2]} {
			copy(buf, data)
			if fm.Parse(buf, &e) != nil {
				continue
			}
			want := fm.Append(nil, &e)
			padded := append(bytes.Clone(data), ' ', '\t', '\r')
			if err := fm.Parse(padded, &e); err != nil {
				t.Fatalf("%s: Parse(line + blanks) = %v\nline %q", fm.Name(), err, data)
			}
			if got := fm.Append(nil, &e); !bytes.Equal(got, want) {
				t.Fatalf("%s: line + blanks\n got %q\nwant %q", fm.Name(), got, want)
			}
		}
		// Round trip: an Event made from data, formatted as nginx would, parses
		// back to the same values.
		want := fuzzEvent(data)
		for _, fm := range formats[:3] {
			line := fm.Append(nil, &want)
			parsed := bytes.Clone(line)
			if err := fm.Parse(parsed, &e); err != nil {
				t.Fatalf("%s: Parse(Append(e)) = %v\nline %q", fm.Name(), err, line)
			}
			if again := fm.Append(nil, &e); !bytes.Equal(again, line) {
				t.Fatalf("%s: round trip\n got %q\nwant %q", fm.Name(), again, line)
			}
			checkFields(t, fm, &want, &e)
		}
	})
}

// checkFields compares the string fields that a format carries verbatim.
func checkFields(t *testing.T, fm *Format, want, got *characteristics.Event) {
	t.Helper()
	has := map[string]bool{}
	for _, v := range fm.Variables() {
		has[v] = true
	}
	same := func(name, a, b string) {
		if a != b {
			t.Fatalf("%s: %s = %q, want %q", fm.Name(), name, b, a)
		}
	}
	if has["remote_addr"] {
		if got.IP != want.IP {
			t.Fatalf("%s: IP = %v, want %v", fm.Name(), got.IP, want.IP)
		}
	}
	if has["request"] {
		same("Method", want.Method, got.Method)
		same("Path", want.Path, got.Path)
		same("Query", want.Query, got.Query)
	}
	if has["http_user_agent"] {
		same("UserAgent", want.UserAgent, got.UserAgent)
	}
	if has["http_referer"] {
		same("Referer", want.Referer, got.Referer)
	}
	if has["http_x_forwarded_for"] {
		w, _ := want.Header("x-forwarded-for")
		g, _ := got.Header("x-forwarded-for")
		same("X-Forwarded-For", w, g)
	}
	if has["cookie_session"] {
		w, _ := want.Cookie("session")
		g, _ := got.Cookie("session")
		same("cookie session", w, g)
	}
	if has["status"] && got.Status != want.Status {
		t.Fatalf("%s: Status = %d, want %d", fm.Name(), got.Status, want.Status)
	}
	if has["request_time"] && got.RequestTime != want.RequestTime {
		t.Fatalf("%s: RequestTime = %v, want %v", fm.Name(), got.RequestTime, want.RequestTime)
	}
}

// fuzzSource hands out pieces of fuzz data, then zeros.
type fuzzSource struct{ b []byte }

func (s *fuzzSource) bytes(n int) []byte {
	out := make([]byte, n)
	copy(out, s.b)
	s.b = s.b[min(n, len(s.b)):]
	return out
}

func (s *fuzzSource) uint(n int) uint64 {
	var b [8]byte
	copy(b[:], s.bytes(n))
	return binary.LittleEndian.Uint64(b[:])
}

// str returns up to 31 bytes; "-" would read back as absent, so it is avoided.
func (s *fuzzSource) str() string {
	v := string(s.bytes(int(s.uint(1) % 32)))
	if v == "-" {
		return "x-"
	}
	return v
}

// token returns a string of bytes that need no quoting and hold no separator.
func (s *fuzzSource) token(alphabet string) string {
	b := s.bytes(int(s.uint(1) % 16))
	for i, c := range b {
		b[i] = alphabet[int(c)%len(alphabet)]
	}
	if len(b) == 1 && b[0] == '-' {
		return "x"
	}
	return string(b)
}

const tokenBytes = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,=:@%/"

func fuzzEvent(data []byte) characteristics.Event {
	s := &fuzzSource{b: data}
	var e characteristics.Event
	if s.uint(1)%2 == 0 {
		e.IP = netip.AddrFrom4([4]byte(s.bytes(4)))
	} else {
		e.IP = netip.AddrFrom16([16]byte(s.bytes(16))).Unmap()
	}
	e.Port = uint16(s.uint(2))
	e.Time = time.Unix(int64(s.uint(4)), int64(s.uint(2)%1000)*1e6).UTC()
	methods := []string{"GET", "POST", "HEAD", "PROPFIND", "M-SEARCH", ""}
	if e.Method = methods[s.uint(1)%uint64(len(methods))]; e.Method != "" {
		e.Path = "/" + s.token(tokenBytes)
		e.Query = s.token(tokenBytes + "?")
		e.Protocol = "HTTP/1.1"
	}
	e.Status = int(s.uint(2) % 1000)
	e.BytesSent = int64(s.uint(4))
	e.RequestTime = float64(s.uint(4)%1e9) / 1000
	e.Referer = s.str()
	e.UserAgent = s.str()
	if v := s.str(); v != "" {
		e.Headers = append(e.Headers, characteristics.Field{Name: "x-forwarded-for", Value: v})
	}
	if v := s.str(); v != "" {
		e.Cookies = append(e.Cookies, characteristics.Field{Name: "session", Value: v})
	}
	e.Host = s.token(tokenBytes)
	e.Vars = append(e.Vars,
		characteristics.Field{Name: "remote_user", Value: s.token(tokenBytes)},
		characteristics.Field{Name: "ssl_protocol", Value: s.token(tokenBytes)},
		characteristics.Field{Name: "upstream_response_time", Value: s.str()})
	return e
}

func FuzzParseJSON(f *testing.F) {
	for _, tc := range jsonLineCases {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzLine {
			return
		}
		var e characteristics.Event
		_ = ParseJSON(bytes.Clone(data), &e) // must not panic
		// Round trip through a JSON log format.
		want := fuzzEvent(data)
		fm := MustCompile(`log_format j escape=json '{"remote_addr":"$remote_addr","remote_port":$remote_port,"msec":$msec,"request":"$request",` +
			`"status":$status,"request_time":$request_time,"http_referer":"$http_referer","http_user_agent":"$http_user_agent",` +
			`"http_x_forwarded_for":"$http_x_forwarded_for","cookie_session":"$cookie_session","upstream_response_time":"$upstream_response_time"}';`)
		line := fm.Append(nil, &want)
		if err := ParseJSON(bytes.Clone(line), &e); err != nil {
			t.Fatalf("ParseJSON(Append(e)) = %v\nline %q", err, line)
		}
		if again := fm.Append(nil, &e); !bytes.Equal(again, line) {
			t.Fatalf("round trip\n got %q\nwant %q", again, line)
		}
		checkFields(t, fm, &want, &e)
	})
}

// FuzzParseAddr checks parseAddr against netip.ParseAddr.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "0.0.0.0", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5",
		"1..2.3", "::1", "2001:db8::1", "::ffff:1.2.3.4", "fe80::1%eth0", "1.2.3.4 ", "", "1234.1.1.1", "0.00.0.0",
		"::", "1::", "::1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "1:2:3:4:5:6::7:8", "1:2:3:4:5:6:7:8:9",
		"1::2::3", "12345::1", "2001:DB8:330:d4fd:4ef5:18ca:1c19:24db", "1:2:3:4:5:6:7:", ":1::2", "1:::2", "g::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 {
			return
		}
		got, ok := parseAddr([]byte(s))
		want, err := netip.ParseAddr(s)
		if ok != (err == nil) || got != want {
			t.Fatalf("parseAddr(%q) = %v, %v; netip.ParseAddr = %v, %v", s, got, ok, want, err)
		}
		// prefixIPv4, parseCombined's fast path, reads an address that
		// netip reads the same, and every plain IPv4 address.
		if a, n, ok := prefixIPv4([]byte(s)); ok {
			if want, err := netip.ParseAddr(s[:n]); err != nil || want != netip.AddrFrom4(a) {
				t.Fatalf("prefixIPv4(%q) = %v, %d; netip.ParseAddr(%q) = %v, %v", s, netip.AddrFrom4(a), n, s[:n], want, err)
			}
		} else if err == nil && want.Is4() {
			t.Fatalf("prefixIPv4(%q) missed the address %v", s, want)
		}
	})
}

// FuzzParseTimeLocal checks parseTimeLocal against time.Parse.
func FuzzParseTimeLocal(f *testing.F) {
	for _, s := range []string{"10/Oct/2000:13:55:36 -0700", "29/Feb/2000:00:00:00 +0000", "29/Feb/1900:00:00:00 +0000",
		"31/Dec/9999:23:59:59 +2359", "01/Jan/0000:00:00:00 -2359", "10/Oct/2000:13:55:60 +0000", "10/Oct/2000:24:00:00 +0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 {
			return
		}
		got, ok := parseTimeLocal([]byte(s))
		want, err := time.Parse("02/Jan/2006:15:04:05 -0700", s)
		if ok && (err != nil || !got.Equal(want)) {
			t.Fatalf("parseTimeLocal(%q) = %v; time.Parse = %v, %v", s, got, want, err)
		}
		// time.Parse also takes one-digit hours, any case of month, minutes of
		// offset over 59; nginx writes none of these, and we read none. What
		// it takes and would write back the same, we must read.
		if !ok && err == nil && want.Format("02/Jan/2006:15:04:05 -0700") == s && s[22:24] < "24" {
			t.Fatalf("parseTimeLocal(%q) failed; time.Parse = %v", s, want)
		}
	})
}

// FuzzParseTimeISO checks parseTimeISO against time.Parse(time.RFC3339Nano)
// on the forms nginx writes.
func FuzzParseTimeISO(f *testing.F) {
	for _, s := range []string{"2000-10-10T13:55:36-07:00", "2000-10-10T13:55:36Z", "2000-10-10T13:55:36.123+02:00",
		"2000-02-30T00:00:00Z", "2000-10-10T13:55:36.Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 {
			return
		}
		got, ok := parseTimeISO([]byte(s))
		want, err := time.Parse(time.RFC3339Nano, s)
		// We also read a ' ' for 'T' and a zone without ':', which RFC 3339
		// does not allow; compare only the RFC 3339 forms.
		rfc := len(s) >= 20 && s[10] == 'T' && (s[len(s)-1] == 'Z' || s[len(s)-3] == ':')
		if ok && rfc && (err != nil || !got.Equal(want)) {
			t.Fatalf("parseTimeISO(%q) = %v; time.Parse = %v, %v", s, got, want, err)
		}
		if !ok && err == nil && want.Format(time.RFC3339Nano) == s {
			t.Fatalf("parseTimeISO(%q) failed; time.Parse = %v", s, want)
		}
	})
}

package syslog

import (
	"errors"
	"testing"
)

const accessLine = `127.0.0.7 - - [28/Nov/2026:04:00:00 +0000] "POST /login HTTP/1.1" 401 15 "-" "curl/8.0"`

var parseTests = []struct {
	name            string
	in              string
	err             error
	format          Format
	pri             int
	time, host, tag string
	msg             string
}{
	{"nginx", "<190>Nov 28 04:00:00 web-1 nginx: " + accessLine, nil, FormatRFC3164, 190, "Nov 28 04:00:00", "web-1", "nginx", accessLine},
	{"nginx single-digit day", "<190>Nov  8 04:00:00 web-1 nginx: " + accessLine, nil, FormatRFC3164, 190, "Nov  8 04:00:00", "web-1", "nginx", accessLine},
	{"nginx nohostname", "<190>Nov 28 04:00:00 nginx: " + accessLine, nil, FormatRFC3164, 190, "Nov 28 04:00:00", "", "nginx", accessLine},
	{"logger with pid", "<13>Nov 28 04:00:00 web-2 guardd-test[4242]: " + accessLine + "\n", nil, FormatRFC3164, 13, "Nov 28 04:00:00", "web-2", "guardd-test", accessLine},
	{"glibc without host", "<13>Nov 28 04:00:00 app[12]: hello", nil, FormatRFC3164, 13, "Nov 28 04:00:00", "", "app", "hello"},
	{"pri 0", "<0>Jan  1 00:00:00 h t: m", nil, FormatRFC3164, 0, "Jan  1 00:00:00", "h", "t", "m"},
	{"empty msg", "<190>Nov 28 04:00:00 web-1 nginx:", nil, FormatRFC3164, 190, "Nov 28 04:00:00", "web-1", "nginx", ""},
	{"rfc5424", "<190>1 2026-11-28T04:00:00.123Z web-3 nginx 77 - - " + accessLine, nil, FormatRFC5424, 190, "2026-11-28T04:00:00.123Z", "web-3", "nginx", accessLine},
	{"rfc5424 sd and bom", `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Appl\]ication"][x@1 a="b"] ` + "\xef\xbb\xbf" + "An application event", nil, FormatRFC5424, 165, "2003-10-11T22:14:15.003Z", "mymachine.example.com", "evntslog", "An application event"},
	{"rfc5424 nil values", "<14>1 - - - - - -", nil, FormatRFC5424, 14, "", "", "", ""},
	{"rfc5424 logger", "<13>1 2026-11-28T04:00:00.000000+00:00 web-4 tester - - [timeQuality tzKnown=\"1\" isSynced=\"0\"] " + accessLine, nil, FormatRFC5424, 13, "2026-11-28T04:00:00.000000+00:00", "web-4", "tester", accessLine},

	{"empty", "", ErrEmpty, 0, 0, "", "", "", ""},
	{"newline only", "\n", ErrEmpty, 0, 0, "", "", "", ""},
	{"no pri", "Nov 28 04:00:00 web-1 nginx: x", ErrPriority, 0, 0, "", "", "", ""},
	{"pri too big", "<192>Nov 28 04:00:00 web-1 nginx: x", ErrPriority, 0, 0, "", "", "", ""},
	{"pri leading zero", "<01>Nov 28 04:00:00 web-1 nginx: x", ErrPriority, 0, 0, "", "", "", ""},
	{"pri unterminated", "<1900000", ErrPriority, 0, 0, "", "", "", ""},
	{"bad month", "<190>Foo 28 04:00:00 web-1 nginx: x", ErrTimestamp, FormatRFC3164, 190, "", "", "", ""},
	{"short stamp", "<190>Nov 28 04:00", ErrTimestamp, FormatRFC3164, 190, "", "", "", ""},
	{"no tag", "<190>Nov 28 04:00:00 web-1 nginx x", ErrTag, FormatRFC3164, 190, "", "web-1", "", ""},
	{"no space after stamp", "<190>Nov 28 04:00:00", ErrHeader, FormatRFC3164, 190, "Nov 28 04:00:00", "", "", ""},
	{"unclosed pid", "<190>Nov 28 04:00:00 web-1 nginx[12: x", ErrTag, FormatRFC3164, 190, "Nov 28 04:00:00", "web-1", "nginx", ""},
	{"rfc5424 cut", "<190>1 2026-11-28T04:00:00Z web-3", ErrHeader, FormatRFC5424, 190, "2026-11-28T04:00:00Z", "", "", ""},
	{"rfc5424 unclosed sd", `<190>1 - h a - - [x a="]`, ErrSD, FormatRFC5424, 190, "", "h", "a", ""},
	{"rfc5424 bad sd", `<190>1 - h a - - x`, ErrSD, FormatRFC5424, 190, "", "h", "a", ""},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			err := Parse([]byte(tt.in), &m)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if m.Format != tt.format || m.Priority != tt.pri || string(m.Time) != tt.time || string(m.Host) != tt.host ||
				string(m.Tag) != tt.tag || string(m.Msg) != tt.msg {
				t.Errorf("got %v pri %d time %q host %q tag %q msg %q", m.Format, m.Priority, m.Time, m.Host, m.Tag, m.Msg)
			}
		})
	}
}

func TestParseAllocs(t *testing.T) {
	in := []byte("<190>Nov 28 04:00:00 web-1 nginx: " + accessLine)
	in5424 := []byte(`<165>1 2003-10-11T22:14:15.003Z h app - ID47 [a@1 b="c\]"] ` + "\xef\xbb\xbfmsg")
	bad := []byte("<190>Nov 28 04:00:00 web-1 nginx x")
	var m Message
	if n := testing.AllocsPerRun(100, func() {
		Parse(in, &m)
		Parse(in5424, &m)
		Parse(bad, &m)
	}); n != 0 {
		t.Fatalf("%v allocations per parse", n)
	}
}

func BenchmarkParse(b *testing.B) {
	in := []byte("<190>Nov 28 04:00:00 web-1 nginx: " + accessLine)
	var m Message
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := Parse(in, &m); err != nil {
			b.Fatal(err)
		}
	}
}

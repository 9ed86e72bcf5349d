package sniff

import (
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/guardd/guardd/characteristics/tlsfp"
)

// appendJSONStringBytewise is appendJSONString without the eight-byte skip:
// the reference the fast path must match byte for byte.
func appendJSONStringBytewise(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, `\n`...)
			case c == '\r':
				dst = append(dst, `\r`...)
			case c == '\t':
				dst = append(dst, `\t`...)
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

var jsonStringCases = []struct{ name, in string }{
	{"empty", ""},
	{"short", "a.b"},
	{"ja3", "771,4865-4866-4867-49195-49199,0-23-65281-10-11-35-16-5-13-18-51-45-43-27-17513,29-23-24,0"},
	{"ja4_r", "t13d1516h2_002f,0035,009c_0005,000a,000b_0403,0804"},
	{"quote_each_lane", "01234567\"1234567" + "0\"234567" + "01\"34567" + "0123456\""},
	{"backslash_late", "abcdefgh\\"},
	{"control_in_word", "abcdefg\x00ijklmnop\x1f"},
	{"bytes_around_0x20", "\x1f\x20\x21 !\x1f\x20\x21 !"},
	{"del_and_tilde", "~~~~~~~\x7f~~~~~~~~"},
	{"utf8_in_word", "abcdefgé.........."},
	{"invalid_utf8", "abcdefgh\xff\xfeabcdefgh"},
	{"line_separators", "abcdefgh\u2028abcdefgh\u2029"},
	{"tab_newline_cr", "GET\t/\r\n/xxxxxxxxxxxx"},
}

func TestAppendJSONString(t *testing.T) {
	for _, tt := range jsonStringCases {
		t.Run(tt.name, func(t *testing.T) {
			// Every alignment of the string against the eight-byte words.
			for pad := range 8 {
				in := strings.Repeat("x", pad) + tt.in
				got, want := appendJSONString(nil, in), appendJSONStringBytewise(nil, in)
				if string(got) != string(want) {
					t.Errorf("pad %d: got %s, want %s", pad, got, want)
				}
			}
		})
	}
}

func TestPlain8(t *testing.T) {
	// Every byte value in every lane of an otherwise plain word.
	for lane := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[lane] = byte(c)
			want := c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
			if got := plain8(load64(string(w), 0)); got != want {
				t.Errorf("lane %d byte %#x: plain8 = %v, want %v", lane, c, got, want)
			}
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, tt := range jsonStringCases {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		if got, want := appendJSONString(nil, s), appendJSONStringBytewise(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	r := Record{Proto: ProtoTLS, Frame: 1234567, Src: netip.MustParseAddr("192.0.2.1"), SrcPort: 51234,
		Dst: netip.MustParseAddr("198.51.100.7"), DstPort: 443, HelloIndex: 1,
		Fingerprint: tlsfp.Fingerprint{
			SNI:      "www.example.com",
			JA3:      "771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53,0-23-65281-10-11-35-16-5-13-18-51-45-43-27-17513-21,29-23-24,0",
			JA3Hash:  "cd08e31494f9531f560d64c695473da9",
			JA3N:     "771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53,0-5-10-11-13-16-18-21-23-27-35-43-45-51-17513-65281,29-23-24,0",
			JA3NHash: "8e19337e7524d2573be54efb2b0784c9",
			JA4:      "t13d1516h2_8daaf6152771_e5627efa2ab1",
			JA4R:     "t13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_0403,0804,0401,0503,0805,0501,0806,0601",
			JA4O:     "t13d1516h2_acb858a92679_18f69afefd3d",
			JA4RO:    "t13d1516h2_1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035_001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015_0403,0804,0401,0503,0805,0501,0806,0601",
		}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendJSON(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

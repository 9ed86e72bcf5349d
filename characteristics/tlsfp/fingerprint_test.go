package tlsfp

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.input and *.golden")

func TestHashes(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "000000000000"},
		{"ja4md_b", "002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9", "8daaf6152771"},
		{"ja4md_c", "0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_0403,0804,0401,0503,0805,0501,0806,0601", "e5627efa2ab1"},
		{"ja4md_c_nosig", "0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01", "6d807ffa2a79"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(hash12s([]byte(tt.in))); got != tt.want {
				t.Errorf("hash12(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestJA3READMEStrings(t *testing.T) {
	// The JA3 README's example strings and hashes, checked on the MD5 step.
	tests := []struct{ in, want string }{
		{"769,47-53-5-10-49161-49162-49171-49172-50-56-19-4,0-10-11,23-24-25,0", "ada70206e40642a3e4461f35503241d5"},
		{"769,4-5-10-9-100-98-3-6-19-18-99,,,", "de350869b8c85de67a350c8d186f11e6"},
	}
	for _, tt := range tests {
		sum := md5.Sum([]byte(tt.in))
		if got := hex.EncodeToString(sum[:]); got != tt.want {
			t.Errorf("md5(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// rfc9001Hello is the ClientHello inside the CRYPTO frame of RFC 9001 A.2
// (also RFC 9369 A.2).
const rfc9001Hello = `010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69484c
000004130113020100 00c000000010000e00000b6578616d706c652e636f6dff01000100000a
00080006001d00170018001000070005 04616c706e0005000501000000000033
00260024001d00209370b2c9caa47fbabaf4559fedba753de171fa71f50f1ce15d43e994ec74d748
002b0003020304000d0010000e0403050306030203080408050806002d00020101001c0002400100
3900320408ffffffffffffffff05048000ffff07048000ffff0801100104800075300901100f08
8394c8f03e51570806048000ffff`

var worked = []uint16{0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035}
var workedSig = []uint16{0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601}

func workedExts(sig ext) []ext {
	return []ext{empty(0x001b), sniExt("example.test"), empty(0x0033), alpnExt("h2", "http/1.1"), empty(0x4469),
		empty(0x0017), empty(0x002d), sig, empty(0x0005), empty(0x0023), empty(0x0012),
		versionsExt(0x0304, 0x0303), empty(0xff01), pointsExt(0), groupsExt(0x001d, 0x0017), empty(0x0015)}
}

func seqU16(start, n int) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = uint16(start + i)
	}
	return out
}

// helloCase is one hello with the fields the spec fixes; every case also has
// a golden file holding its bytes (.input) and all fingerprints (.golden).
type helloCase struct {
	name      string
	hello     func(t testing.TB) []byte
	transport byte
	opts      Options
	want      Fingerprint // non-empty fields are checked
	ja4A      string      // checked when set
}

func spec(h helloSpec) func(t testing.TB) []byte {
	return func(t testing.TB) []byte { return h.build(t) }
}

func helloCases() []helloCase {
	return []helloCase{
		{
			name: "ja4md_worked_example", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: worked, exts: workedExts(sigalgsExt(workedSig...))}),
			want:  Fingerprint{JA4: "t13d1516h2_8daaf6152771_e5627efa2ab1", JA4O: "t13d1516h2_acb858a92679_18f69afefd3d"},
		},
		{
			name: "ja4md_worked_example_no_sigalgs", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: worked, exts: workedExts(sigalgsExt())}),
			want:  Fingerprint{JA4: "t13d1516h2_8daaf6152771_6d807ffa2a79"},
		},
		{
			name: "ja3_readme_1", transport: 't',
			hello: spec(helloSpec{version: 0x0301, ciphers: []uint16{47, 53, 5, 10, 49161, 49162, 49171, 49172, 50, 56, 19, 4},
				exts: []ext{sniExt("a.test"), groupsExt(23, 24, 25), pointsExt(0)}}),
			want: Fingerprint{JA3: "769,47-53-5-10-49161-49162-49171-49172-50-56-19-4,0-10-11,23-24-25,0",
				JA3Hash: "ada70206e40642a3e4461f35503241d5", SNI: "a.test"},
		},
		{
			name: "ja3_readme_2_no_extensions", transport: 't',
			hello: spec(helloSpec{version: 0x0301, ciphers: []uint16{4, 5, 10, 9, 100, 98, 3, 6, 19, 18, 99}, noExtBlock: true}),
			want:  Fingerprint{JA3: "769,4-5-10-9-100-98-3-6-19-18-99,,,", JA3Hash: "de350869b8c85de67a350c8d186f11e6"},
		},
		{
			name: "rfc9001_a2", transport: 'q',
			hello: func(t testing.TB) []byte { return fromHex(t, rfc9001Hello) },
			want: Fingerprint{SNI: "example.com",
				JA3: "771,4865-4866,0-65281-10-16-5-51-43-13-45-28-57,29-23-24,", JA3Hash: "41bc9ae914d6cb3bd0bd0a5453ab7d7f",
				JA3N: "771,4865-4866,0-5-10-13-16-28-43-45-51-57-65281,29-23-24,", JA3NHash: "fca41d1ebff0bdc92a301388d6d01588",
				JA4:  "q13d0211an_62ed6f6ca7ad_4d634acda6c0",
				JA4R: "q13d0211an_1301,1302_0005,000a,000d,001c,002b,002d,0033,0039,ff01_0403,0503,0603,0203,0804,0805,0806",
				JA4O: "q13d0211an_62ed6f6ca7ad_46fb564859bb"},
		},
		{
			name: "synthetic_s1_grease", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x1a1a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0x00ff},
				exts: []ext{empty(0x0a0a), sniExt("example.test"), empty(0x0017), empty(0xff01), groupsExt(0x3a3a, 0x001d, 0x0017, 0x0018),
					pointsExt(0), alpnExt("h2", "http/1.1"), sigalgsExt(0x0a0a, 0x0403, 0x0804, 0x0401), versionsExt(0x5a5a, 0x0304, 0x0303),
					empty(0x0033), empty(0x002d), empty(0x0015)}}),
			want: Fingerprint{
				JA3: "771,4865-4866-4867-49195-49199-255,0-23-65281-10-11-16-13-43-51-45-21,29-23-24,0", JA3Hash: "5075b21070d663610fba33a1223ceb5a",
				JA3NHash: "954324a407356d23c1121f1e19472317",
				JA4:      "t13d0611h2_bcfe0a960bb4_d012e2729395",
				JA4R:     "t13d0611h2_00ff,1301,1302,1303,c02b,c02f_000a,000b,000d,0015,0017,002b,002d,0033,ff01_0403,0804,0401",
				JA4O:     "t13d0611h2_4b64b28dc7bd_44adb7c8427c"},
		},
		{
			name: "synthetic_s2_no_extensions_block", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x002f, 0x0035, 0x000a, 0x00ff}, noExtBlock: true}),
			want: Fingerprint{JA3: "771,47-53-10-255,,,", JA3Hash: "14e08c1cc30ec7bd206d9fa584d2bb77",
				JA3N: "771,47-53-10-255,,,", JA3NHash: "14e08c1cc30ec7bd206d9fa584d2bb77",
				JA4: "t12i040000_e2f6df6ad119_000000000000", JA4R: "t12i040000_000a,002f,0035,00ff_"},
		},
		{
			name: "extensions_length_zero", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x002f, 0x0035, 0x000a, 0x00ff}, exts: nil}),
			want:  Fingerprint{JA3: "771,47-53-10-255,,,", JA4: "t12i040000_e2f6df6ad119_000000000000"},
		},
		{
			name: "only_sni_and_alpn", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x1301}, exts: []ext{sniExt("x.test"), alpnExt("http/1.1")}}),
			want: Fingerprint{JA4: "t12d0102h1_" + string(hash12s([]byte("1301"))) + "_000000000000",
				JA4R: "t12d0102h1_1301_", JA4RO: "t12d0102h1_1301_0000,0010"},
		},
		{
			name: "over_99_ciphers_and_extensions", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: seqU16(1, 120), exts: plainExts(seqU16(0x1000, 105)...)}),
			ja4A:  "t12i999900",
		},
		{
			name: "duplicate_extensions_first_wins", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x1301},
				exts: []ext{sniExt("first.test"), sniExt("second.test"), groupsExt(0x001d), groupsExt(0x0017), pointsExt(0), pointsExt(1, 2),
					sigalgsExt(0x0403), sigalgsExt(0x0804), alpnExt("h2"), alpnExt("http/1.1"), versionsExt(0x0304), versionsExt(0x0302)}}),
			want: Fingerprint{SNI: "first.test", JA3: "771,4865,0-0-10-10-11-11-13-13-16-16-43-43,29,0",
				JA4R: "t13d0112h2_1301_000a,000a,000b,000b,000d,000d,002b,002b_0403"},
		},
		{
			name: "grease_only_supported_versions", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x2a2a, 0x1301},
				exts: []ext{versionsExt(0x2a2a), sigalgsExt(0x1a1a, 0x2a2a), empty(0xfafa)}}),
			want: Fingerprint{JA3: "771,4865,43-13,,", JA4R: "t00i010200_1301_000d,002b"},
		},
		{
			name: "sigalgs_only_in_cert_and_delegated", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x1301},
				exts: []ext{{0x0032, u16list(0x0403)}, {0x0022, u16list(0x0804)}}}),
			want: Fingerprint{JA4R: "t12i010200_1301_0022,0032", JA4RO: "t12i010200_1301_0032,0022"},
		},
		{
			name: "ech_outer_counted", transport: 't',
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x1301},
				exts: []ext{sniExt("public.test"), {0xfe0d, []byte{0, 1, 2}}, versionsExt(0x0304)}}),
			want: Fingerprint{JA4R: "t13d010300_1301_002b,fe0d"},
		},
		{
			name: "legacy_alpn_flag", transport: 't', opts: Options{LegacyALPN: true},
			hello: spec(helloSpec{version: 0x0303, ciphers: []uint16{0x1301}, exts: []ext{alpnExt("a")}}),
			ja4A:  "t12i0101a0",
		},
		{
			name: "sslv2_compatible", transport: 't',
			hello: func(testing.TB) []byte { return sslv2Hello() },
			want: Fingerprint{JA3: "", JA3Hash: "", JA4R: "t10i020000_0004,002f_",
				JA4: "t10i020000_" + string(hash12s([]byte("0004,002f"))) + "_000000000000"},
		},
	}
}

// sslv2Hello is an SSLv2-compatible CLIENT-HELLO offering TLS 1.0 with three
// specs, one of them SSLv2-only (dropped).
func sslv2Hello() []byte {
	specs := []byte{0x00, 0x00, 0x04, 0x01, 0x00, 0x80, 0x00, 0x00, 0x2f}
	body := []byte{1, 0x03, 0x01, 0, byte(len(specs)), 0, 0, 0, 16}
	body = append(body, specs...)
	body = append(body, bytes.Repeat([]byte{0xaa}, 16)...)
	return append([]byte{0x80 | byte(len(body)>>8), byte(len(body))}, body...)
}

func formatFP(fp Fingerprint) string {
	var b strings.Builder
	for _, kv := range [][2]string{{"sni", fp.SNI}, {"alpn", fp.ALPN}, {"ja3", fp.JA3}, {"ja3_hash", fp.JA3Hash}, {"ja3n", fp.JA3N},
		{"ja3n_hash", fp.JA3NHash}, {"ja4", fp.JA4}, {"ja4_r", fp.JA4R}, {"ja4_o", fp.JA4O}, {"ja4_ro", fp.JA4RO}} {
		fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
	}
	return b.String()
}

func checkGolden(t *testing.T, name, ext string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+ext)
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
		t.Errorf("%s differs from golden:\n got: %s\nwant: %s", path, got, want)
	}
}

func hexLines(b []byte) []byte {
	h := hex.EncodeToString(b)
	var out []byte
	for len(h) > 64 {
		out = append(append(out, h[:64]...), '\n')
		h = h[64:]
	}
	return append(append(out, h...), '\n')
}

func TestCompute(t *testing.T) {
	for _, tc := range helloCases() {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.hello(t)
			var ch ClientHello
			if err := ParseHello(msg, &ch); err != nil {
				t.Fatalf("parse: %v", err)
			}
			fp := Compute(&ch, tc.transport, tc.opts)
			check := func(field, got, want string) {
				if want != "" && got != want {
					t.Errorf("%s = %q, want %q", field, got, want)
				}
			}
			check("sni", fp.SNI, tc.want.SNI)
			check("ja3", fp.JA3, tc.want.JA3)
			check("ja3_hash", fp.JA3Hash, tc.want.JA3Hash)
			check("ja3n", fp.JA3N, tc.want.JA3N)
			check("ja3n_hash", fp.JA3NHash, tc.want.JA3NHash)
			check("ja4", fp.JA4, tc.want.JA4)
			check("ja4_r", fp.JA4R, tc.want.JA4R)
			check("ja4_o", fp.JA4O, tc.want.JA4O)
			check("ja4_ro", fp.JA4RO, tc.want.JA4RO)
			if tc.ja4A != "" && fp.JA4[:10] != tc.ja4A {
				t.Errorf("ja4 part a = %s, want %s", fp.JA4[:10], tc.ja4A)
			}
			if ch.SSLv2 && (fp.JA3 != "" || fp.JA3Hash != "" || fp.JA3N != "" || fp.JA3NHash != "") {
				t.Errorf("SSLv2 hello has a JA3: %+v", fp)
			}
			// Invariants that hold for every hello.
			if a := fp.JA4[:10]; fp.JA4R[:10] != a || fp.JA4O[:10] != a || fp.JA4RO[:10] != a {
				t.Errorf("part a differs across variants: %+v", fp)
			}
			if !ch.SSLv2 {
				sum := md5.Sum([]byte(fp.JA3))
				if hex.EncodeToString(sum[:]) != fp.JA3Hash {
					t.Errorf("ja3_hash is not md5(ja3)")
				}
			}
			checkGolden(t, tc.name, ".input", hexLines(msg))
			checkGolden(t, tc.name, ".golden", []byte(formatFP(fp)))
		})
	}
}

func TestALPNChars(t *testing.T) {
	tests := []struct {
		name    string
		has     bool
		p       []byte
		want    string
		wantLeg string
	}{
		{"absent", false, nil, "00", "00"},
		{"empty list or empty name", true, nil, "00", "00"},
		{"0xAB", true, []byte{0xab}, "ab", "90"},
		{"0x20", true, []byte{0x20}, "20", " 0"},
		{"0xAB 0xCD", true, []byte{0xab, 0xcd}, "ad", "99"},
		{"0x20 0x61", true, []byte{0x20, 0x61}, "21", " a"},
		{"0x30 0xAB", true, []byte{0x30, 0xab}, "3b", "09"},
		{"0x61 0x20", true, []byte{0x61, 0x20}, "60", "a "},
		{"0x30 0x31 0xAB 0xCD", true, []byte{0x30, 0x31, 0xab, 0xcd}, "3d", "09"},
		{"0x30 0xAB 0xCD 0x31", true, []byte{0x30, 0xab, 0xcd, 0x31}, "01", "01"},
		{"h2", true, []byte("h2"), "h2", "h2"},
		{"http/1.1", true, []byte("http/1.1"), "h1", "h1"},
		{"a", true, []byte("a"), "aa", "a0"},
		{"underscore start", true, []byte("_x"), "58", "_x"},
		{"grease name kept", true, []byte{0x0a, 0x0a}, "0a", "0a"},
		{"control bytes", true, []byte{0x01, 0x1f}, "0f", "0f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := ClientHello{HasALPN: tt.has, ALPN: tt.p}
			a, b := alpnChars(&ch, false)
			if got := string([]byte{a, b}); got != tt.want {
				t.Errorf("alpn = %q, want %q", got, tt.want)
			}
			a, b = alpnChars(&ch, true)
			if got := string([]byte{a, b}); got != tt.wantLeg {
				t.Errorf("legacy alpn = %q, want %q", got, tt.wantLeg)
			}
		})
	}
}

// TestALPNInHello checks the ALPN shapes end to end through the parser.
func TestALPNInHello(t *testing.T) {
	tests := []struct {
		name string
		alpn *ext
		want string
	}{
		{"absent", nil, "00"},
		{"empty list", &ext{extALPN, []byte{0, 0}}, "00"},
		{"empty first name", ptr(alpnExt("", "h2")), "00"},
		{"one byte", ptr(alpnExt("a")), "aa"},
		{"non-ascii", ptr(alpnExt("\xab\xcd")), "ad"},
		{"space at end", ptr(alpnExt("h2 ")), "60"},
		{"grease name", ptr(alpnExt("\x3a\x3a", "h2")), "3a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := helloSpec{version: 0x0303, ciphers: []uint16{0x1301}}
			if tt.alpn != nil {
				h.exts = []ext{*tt.alpn}
			}
			var ch ClientHello
			if err := ParseClientHello(h.build(t), &ch); err != nil {
				t.Fatal(err)
			}
			if got := Compute(&ch, 't', Options{}).JA4[8:10]; got != tt.want {
				t.Errorf("alpn chars = %q, want %q", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestJA4Version(t *testing.T) {
	tests := []struct {
		legacy   uint16
		versions []uint16
		has      bool
		want     string
	}{
		{0x0303, nil, false, "12"},
		{0x0303, []uint16{0x0304, 0x0303}, true, "13"},
		{0x0303, []uint16{0x2a2a}, true, "00"},
		{0x0303, []uint16{0x7f1c, 0x0304}, true, "00"}, // draft codes are numerically highest
		{0x0300, nil, false, "s3"},
		{0x0002, nil, false, "s2"},
		{0x0302, nil, false, "11"},
		{0x0301, nil, false, "10"},
		{0xfeff, nil, false, "d1"},
		{0xfefd, nil, false, "d2"},
		{0xfefc, nil, false, "d3"},
		{0x1234, nil, false, "00"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%04x_%v", tt.legacy, tt.versions), func(t *testing.T) {
			ch := ClientHello{LegacyVersion: tt.legacy, SupportedVersions: tt.versions, HasSupportedVersions: tt.has}
			if got := ja4Version(&ch); got != tt.want {
				t.Errorf("version = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGREASE(t *testing.T) {
	var got []uint16
	for v := 0; v <= 0xffff; v++ {
		if IsGREASE(uint16(v)) {
			got = append(got, uint16(v))
		}
	}
	if len(got) != 16 {
		t.Fatalf("%d GREASE values, want 16", len(got))
	}
	for i, v := range got {
		if want := uint16(0x0a0a + 0x1010*i); v != want {
			t.Errorf("GREASE[%d] = %04x, want %04x", i, v, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	good := helloCases()[5].hello(t) // S1: every extension kind
	var ch ClientHello
	if err := ParseClientHello(good, &ch); err != nil {
		t.Fatal(err)
	}
	t.Run("every_truncation", func(t *testing.T) {
		for n := range len(good) {
			if err := ParseClientHello(good[:n], &ch); err == nil {
				t.Fatalf("prefix of %d bytes parsed", n)
			} else if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		}
	})
	t.Run("trailing_byte", func(t *testing.T) {
		if ParseClientHello(append(append([]byte{}, good...), 0), &ch) == nil {
			t.Error("trailing byte accepted")
		}
	})
	corrupt := []struct {
		name string
		msg  func() []byte
	}{
		{"handshake_length_long", func() []byte { b := clone(good); b[3]++; return b }},
		{"cipher_length_odd", func() []byte {
			b := helloSpec{version: 0x0303, ciphers: []uint16{1}, noExtBlock: true}.build(t)
			b[4+2+32+1+32+1]-- // cipher length 2 → 1
			return b
		}},
		{"extension_data_overflows_block", func() []byte {
			b := helloSpec{version: 0x0303, ciphers: []uint16{1}, exts: []ext{empty(0x17)}}.build(t)
			b[len(b)-1] = 5 // extension data length 5, none present
			return b
		}},
		{"groups_list_inconsistent", func() []byte {
			return helloSpec{version: 0x0303, ciphers: []uint16{1}, exts: []ext{{extSupportedGroups, []byte{0, 4, 0, 0x1d}}}}.build(t)
		}},
		{"alpn_name_overflows", func() []byte {
			return helloSpec{version: 0x0303, ciphers: []uint16{1}, exts: []ext{{extALPN, []byte{0, 3, 5, 'h', '2'}}}}.build(t)
		}},
		{"versions_odd", func() []byte {
			return helloSpec{version: 0x0303, ciphers: []uint16{1}, exts: []ext{{extSupportedVersions, []byte{3, 3, 4, 3}}}}.build(t)
		}},
		{"not_type_1", func() []byte { b := clone(good); b[0] = 2; return b }},
		{"too_long", func() []byte { return make([]byte, MaxHelloLen+1) }},
		{"sslv2_lengths", func() []byte { b := sslv2Hello(); b[6]++; return b }},
		{"sslv2_truncated", func() []byte { b := sslv2Hello(); return b[:len(b)-1] }},
	}
	for _, c := range corrupt {
		t.Run(c.name, func(t *testing.T) {
			if err := ParseHello(c.msg(), &ch); err == nil {
				t.Error("parsed")
			}
		})
	}
	t.Run("malformed_sni_still_present", func(t *testing.T) {
		b := helloSpec{version: 0x0303, ciphers: []uint16{1}, exts: []ext{{extServerName, []byte{9}}}}.build(t)
		if err := ParseClientHello(b, &ch); err != nil {
			t.Fatal(err)
		}
		if !ch.HasSNI || ch.SNI != "" {
			t.Errorf("HasSNI=%v SNI=%q", ch.HasSNI, ch.SNI)
		}
	})
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func TestParseReusesBuffers(t *testing.T) {
	msg := helloCases()[0].hello(t)
	var ch ClientHello
	if err := ParseClientHello(msg, &ch); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := ParseClientHello(msg, &ch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ParseClientHello allocates %.1f times per call, want 0", allocs)
	}
	if ch.SNI != "example.test" || string(ch.ALPN) != "h2" {
		t.Errorf("SNI %q ALPN %q", ch.SNI, ch.ALPN)
	}
}

func TestComputeAllocs(t *testing.T) {
	var ch ClientHello
	if err := ParseClientHello(helloCases()[0].hello(t), &ch); err != nil {
		t.Fatal(err)
	}
	// Two backing arrays for the ten strings.
	if allocs := testing.AllocsPerRun(100, func() { _ = Compute(&ch, 't', Options{}) }); allocs > 2 {
		t.Errorf("Compute allocates %.1f times, want <= 2", allocs)
	}
}

func TestCopyTo(t *testing.T) {
	cases := helloCases()
	var dst ClientHello
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ch ClientHello
			if err := ParseHello(tc.hello(t), &ch); err != nil {
				t.Fatalf("parse: %v", err)
			}
			want := Compute(&ch, tc.transport, tc.opts)
			wantALPNNil := ch.ALPN == nil
			ch.CopyTo(&dst) // dst still holds the previous case's buffers
			// Parsing another hello into ch must not change the copy.
			other := cases[(i+1)%len(cases)]
			if err := ParseHello(other.hello(t), &ch); err != nil {
				t.Fatalf("parse %s: %v", other.name, err)
			}
			if got := Compute(&dst, tc.transport, tc.opts); got != want {
				t.Errorf("fingerprint of the copy:\n got %+v\nwant %+v", got, want)
			}
			if (dst.ALPN == nil) != wantALPNNil {
				t.Errorf("copy's ALPN nil = %v, want %v", dst.ALPN == nil, wantALPNNil)
			}
		})
	}
}

func TestCopyToAllocs(t *testing.T) {
	var ch, dst ClientHello
	if err := ParseClientHello(helloCases()[0].hello(t), &ch); err != nil {
		t.Fatal(err)
	}
	ch.CopyTo(&dst)
	if allocs := testing.AllocsPerRun(100, func() { ch.CopyTo(&dst) }); allocs != 0 {
		t.Errorf("CopyTo into a grown ClientHello allocates %.1f times, want 0", allocs)
	}
}

// TestAppendText checks that AppendText, after whatever a buffer already
// holds, gives the fingerprints of Compute.
func TestAppendText(t *testing.T) {
	buf := []byte("bytes of the records before")
	for _, tc := range helloCases() {
		t.Run(tc.name, func(t *testing.T) {
			var ch ClientHello
			if err := ParseHello(tc.hello(t), &ch); err != nil {
				t.Fatalf("parse: %v", err)
			}
			want := Compute(&ch, tc.transport, tc.opts)
			var txt Text
			buf, txt = AppendText(buf, &ch, tc.transport, tc.opts)
			if got := txt.Fingerprint(string(buf)); got != want {
				t.Errorf("AppendText:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestAppendTextAllocs(t *testing.T) {
	var ch ClientHello
	if err := ParseClientHello(helloCases()[0].hello(t), &ch); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 4096)
	if allocs := testing.AllocsPerRun(100, func() { _, _ = AppendText(buf[:0], &ch, 't', Options{}) }); allocs != 0 {
		t.Errorf("AppendText into a buffer with room allocates %.1f times, want 0", allocs)
	}
}

// TestTextPlain checks that Plain covers every fingerprint but the SNI and
// ALPN and holds nothing JSON must escape, and that a legacy ALPN character
// that needs escaping makes it empty.
func TestTextPlain(t *testing.T) {
	for _, tc := range helloCases() {
		t.Run(tc.name, func(t *testing.T) {
			var ch ClientHello
			if err := ParseHello(tc.hello(t), &ch); err != nil {
				t.Fatalf("parse: %v", err)
			}
			b, txt := AppendText([]byte("before"), &ch, tc.transport, tc.opts)
			start, end := txt.Plain()
			if start >= end {
				t.Fatal("not plain")
			}
			for _, sp := range []span{txt.ja3, txt.ja3n, txt.ja4r, txt.ja4ro, txt.ja3Hash, txt.ja3nHash, txt.ja4, txt.ja4o} {
				if sp.start < sp.end && (sp.start < start || sp.end > end) {
					t.Errorf("field at [%d,%d) outside the plain span [%d,%d)", sp.start, sp.end, start, end)
				}
			}
			for i, c := range b[start:end] {
				if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
					t.Fatalf("byte %d of the plain span is %q", i, c)
				}
			}
		})
	}
	for _, alpn := range []string{`"x`, `a\`} {
		ch := ClientHello{LegacyVersion: 0x0303, Ciphers: []uint16{0x1301}, HasALPN: true, ALPN: []byte(alpn)}
		_, txt := AppendText(nil, &ch, 't', Options{LegacyALPN: true})
		if start, end := txt.Plain(); start != end {
			t.Errorf("legacy ALPN %q: plain span [%d,%d), want none", alpn, start, end)
		}
		if _, txt = AppendText(nil, &ch, 't', Options{}); func() bool { s, e := txt.Plain(); return s == e }() {
			t.Errorf("spec ALPN %q: not plain", alpn)
		}
	}
}

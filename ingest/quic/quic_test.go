package quic

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics/tlsfp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n got: %s\nwant: %s", path, got, want)
	}
}

var rfcDCID = []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}

func fromHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInitialKeys(t *testing.T) {
	tests := []struct {
		name                 string
		version              uint32
		secret, key, iv, hpk string
	}{
		{"rfc9001_a1_v1", Version1, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea",
			"1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c", "9f50449e04a0e810283a1e9933adedd2"},
		{"rfc9369_a1_v2", Version2, "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b",
			"8b1a0bc121284290a29e0971b5cd045d", "91f73e2351d8fa91660e909f", "45b95e15235d6f45a6b19cbcb0294ba9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := InitialKeys(tt.version, rfcDCID)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what      string
				got, want string
			}{
				{"secret", hex.EncodeToString(k.Secret[:]), tt.secret},
				{"key", hex.EncodeToString(k.Key[:]), tt.key},
				{"iv", hex.EncodeToString(k.IV[:]), tt.iv},
				{"hp", hex.EncodeToString(k.HP[:]), tt.hpk},
			} {
				if c.got != c.want {
					t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
				}
			}
		})
	}
	if _, err := InitialKeys(0x51303530, rfcDCID); err == nil {
		t.Error("gQUIC version accepted")
	}
	if _, err := InitialKeys(Version1, make([]byte, 21)); err == nil {
		t.Error("21-byte DCID accepted")
	}
}

// rfcCryptoFrame is the CRYPTO frame of RFC 9001 A.2 / RFC 9369 A.2.
const rfcCryptoFrame = `060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868
04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578
616d706c652e636f6dff01000100000a00080006001d00170018001000070005
04616c706e000500050100000000003300260024001d00209370b2c9caa47fba
baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400
0d0010000e0403050306030203080408050806002d00020101001c0002400100
3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000
75300901100f088394c8f03e51570806048000ffff`

func readHexFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return fromHex(t, string(b))
}

func TestRFCClientInitial(t *testing.T) {
	frame := fromHex(t, rfcCryptoFrame)
	wantHello := frame[4:]
	tests := []struct {
		name    string
		version uint32
		file    string
		header  string
	}{
		{"rfc9001_a2_v1", Version1, "rfc9001-a2-client-initial.hex", "c300000001088394c8f03e5157080000449e00000002"},
		{"rfc9369_a2_v2", Version2, "rfc9369-a2-client-initial.hex", "d36b3343cf088394c8f03e5157080000449e00000002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkt := readHexFile(t, tt.file)
			if len(pkt) != 1200 || !LooksLikeInitial(pkt) {
				t.Fatalf("RFC packet: %d bytes, LooksLikeInitial %v", len(pkt), LooksLikeInitial(pkt))
			}
			// Our sealer reproduces the RFC's protected packet exactly.
			k, err := InitialKeys(tt.version, rfcDCID)
			if err != nil {
				t.Fatal(err)
			}
			payload := append(slices.Clone(frame), make([]byte, 1162-len(frame))...)
			if sealed := k.Seal(fromHex(t, tt.header), 2, payload); !bytes.Equal(sealed, pkt) {
				t.Fatal("Seal does not reproduce the RFC packet")
			}
			orig := slices.Clone(pkt)
			var f Flow
			hello, ok := f.Handle(pkt)
			if !ok || !bytes.Equal(hello, wantHello) {
				t.Fatalf("hello %v %x", ok, hello)
			}
			if !bytes.Equal(pkt, orig) {
				t.Error("Handle modified the datagram")
			}
			if !f.Done() {
				t.Error("not done after the hello")
			}
			if _, ok := f.Handle(pkt); ok {
				t.Error("hello emitted twice")
			}
			var ch tlsfp.ClientHello
			if err := tlsfp.ParseClientHello(hello, &ch); err != nil {
				t.Fatal(err)
			}
			fp := tlsfp.Compute(&ch, 'q', tlsfp.Options{})
			if fp.SNI != "example.com" || fp.JA4 != "q13d0211an_62ed6f6ca7ad_4d634acda6c0" ||
				fp.JA3Hash != "41bc9ae914d6cb3bd0bd0a5453ab7d7f" || fp.JA4O != "q13d0211an_62ed6f6ca7ad_46fb564859bb" {
				t.Errorf("fingerprint %+v", fp)
			}
			golden := fmt.Sprintf("hello: %x\nsni: %s\nja3: %s\nja3_hash: %s\nja3n: %s\nja3n_hash: %s\nja4: %s\nja4_r: %s\nja4_o: %s\nja4_ro: %s\n",
				hello, fp.SNI, fp.JA3, fp.JA3Hash, fp.JA3N, fp.JA3NHash, fp.JA4, fp.JA4R, fp.JA4O, fp.JA4RO)
			checkGolden(t, tt.name+".golden", golden)
		})
	}
}

func TestTruncatedPackets(t *testing.T) {
	pkt := readHexFile(t, "rfc9001-a2-client-initial.hex")
	for n := range len(pkt) {
		var f Flow
		if _, ok := f.Handle(pkt[:n]); ok {
			t.Fatalf("hello from a %d-byte prefix", n)
		}
	}
	// Corrupt each byte of the header: no panic, and no hello unless the
	// byte is one the AEAD does not cover.
	for i := range 30 {
		c := slices.Clone(pkt)
		c[i] ^= 0x55
		var f Flow
		f.Handle(c)
	}
}

// builder makes client Initials for a flow.
type builder struct {
	t       testing.TB
	version uint32
	dcid    []byte // DCID written in the header
	keyDCID []byte // DCID the keys come from
	pn      uint64
}

func putVarint(b []byte, v uint64) []byte {
	switch {
	case v < 1<<6:
		return append(b, byte(v))
	case v < 1<<14:
		return binary.BigEndian.AppendUint16(b, uint16(v)|0x4000)
	default:
		return binary.BigEndian.AppendUint32(b, uint32(v)|0x80000000)
	}
}

func cryptoFrame(off int, data []byte) []byte {
	b := putVarint([]byte{0x06}, uint64(off))
	b = putVarint(b, uint64(len(data)))
	return append(b, data...)
}

// initial seals frames into one Initial packet (4-byte packet number).
func (bl *builder) initial(frames ...[]byte) []byte {
	payload := slices.Concat(frames...)
	if len(payload) < 4 {
		payload = append(payload, make([]byte, 4-len(payload))...)
	}
	typeBits := byte(0)
	if bl.version == Version2 {
		typeBits = 1
	}
	hdr := []byte{0xc0 | typeBits<<4 | 3}
	hdr = binary.BigEndian.AppendUint32(hdr, bl.version)
	hdr = append(hdr, byte(len(bl.dcid)))
	hdr = append(hdr, bl.dcid...)
	hdr = append(hdr, 4, 0xaa, 0xbb, 0xcc, 0xdd) // SCID
	hdr = append(hdr, 0)                         // no token
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(4+len(payload)+16)|0x4000)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(bl.pn))
	kd := bl.keyDCID
	if kd == nil {
		kd = bl.dcid
	}
	k, err := InitialKeys(bl.version, kd)
	if err != nil {
		bl.t.Fatal(err)
	}
	out := k.Seal(hdr, bl.pn, payload)
	bl.pn++
	return out
}

// longPacket is an unprotected-looking Handshake or 0-RTT packet (random
// payload) to coalesce after an Initial.
func longPacket(version uint32, k kind, n int) []byte {
	typeBits := byte(k)
	if version == Version2 {
		typeBits = [4]byte{1, 2, 3, 0}[k]
	}
	b := []byte{0xc0 | typeBits<<4}
	b = binary.BigEndian.AppendUint32(b, version)
	b = append(b, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(n)|0x4000)
	for i := range n {
		b = append(b, byte(i*7))
	}
	return b
}

// testHello is a ClientHello-shaped message of n bytes: the Flow checks only
// the type and length.
func testHello(n int) []byte {
	h := []byte{1, byte((n - 4) >> 16), byte((n - 4) >> 8), byte(n - 4)}
	for i := 4; i < n; i++ {
		h = append(h, byte(i*31+7))
	}
	return h
}

func TestFlow(t *testing.T) {
	hello := testHello(1800)
	garbage := bytes.Repeat([]byte{0xee}, 1800)
	odcid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	newDCID := []byte{9, 9, 9, 9}
	ping, pad := []byte{0x01}, make([]byte, 40)
	ack := []byte{0x02, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00} // largest 1, delay 0, 1 range
	ackECN := []byte{0x03, 0x01, 0x00, 0x00, 0x00, 1, 2, 3}
	cc := []byte{0x1c, 0x0a, 0x00, 0x00}

	tests := []struct {
		name      string
		datagrams func(v uint32) [][]byte
		at        int // index of the datagram that yields the hello, -1 for none
		done      bool
	}{
		{"one packet", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			return [][]byte{b.initial(cryptoFrame(0, hello[:1000]), cryptoFrame(1000, hello[1000:]))}
		}, 0, true},
		{"two datagrams in order", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			return [][]byte{b.initial(cryptoFrame(0, hello[:1100])), b.initial(cryptoFrame(1100, hello[1100:]))}
		}, 1, true},
		{"shuffled small frames with ping, padding and acks", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			var frames [][]byte
			for off := 0; off < len(hello); off += 97 {
				frames = append(frames, cryptoFrame(off, hello[off:min(off+97, len(hello))]))
			}
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
			var mixed [][]byte
			for i, fr := range frames {
				mixed = append(mixed, fr, ping)
				if i == 3 {
					mixed = append(mixed, ack, ackECN)
				}
			}
			mixed = append(mixed, pad)
			return [][]byte{b.initial(mixed[:len(mixed)/2]...), b.initial(mixed[len(mixed)/2:]...)}
		}, 1, true},
		{"gap filled by a later datagram, dcid changed", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			d1 := b.initial(cryptoFrame(0, hello[:500]), cryptoFrame(1000, hello[1000:]))
			b.dcid, b.keyDCID = newDCID, odcid // server's chosen ID, keys unchanged
			d2 := b.initial(cryptoFrame(500, hello[500:1000]))
			return [][]byte{d1, d2}
		}, 1, true},
		{"first copy wins on overlap", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			d1 := b.initial(cryptoFrame(0, hello[:600]))
			d2 := b.initial(cryptoFrame(300, slices.Concat(garbage[300:600], hello[600:900])))
			d3 := b.initial(cryptoFrame(0, garbage[:900]), cryptoFrame(900, hello[900:]))
			return [][]byte{d1, d2, d3}
		}, 2, true},
		{"retransmission duplicates", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			d1 := b.initial(cryptoFrame(0, hello[:1100]))
			return [][]byte{d1, d1, b.initial(cryptoFrame(0, hello[:1100])), b.initial(cryptoFrame(1100, hello[1100:])), d1}
		}, 3, true},
		{"coalesced initials, 0-rtt, handshake and padding", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			d := slices.Concat(b.initial(cryptoFrame(0, hello[:900])), b.initial(cryptoFrame(900, hello[900:])),
				longPacket(v, kind0RTT, 50), longPacket(v, kindHandshake, 60), make([]byte, 100))
			return [][]byte{d}
		}, 0, true},
		{"retry: new keys from the new dcid", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			d1 := b.initial(cryptoFrame(0, hello[:700])) // second half lost
			b.dcid, b.pn = newDCID, 0                    // after Retry: new DCID, new keys
			return [][]byte{d1, b.initial(cryptoFrame(0, hello[:1100])), b.initial(cryptoFrame(1100, hello[1100:]))}
		}, 2, true},
		{"foreign packets ignored", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			foreign := &builder{t: t, version: v, dcid: odcid, keyDCID: []byte{7}} // opens under no client key
			vn := slices.Concat([]byte{0x80, 0, 0, 0, 0, 8}, odcid, []byte{0, 0, 0, 0, 1})
			short := append([]byte{0x40}, make([]byte, 60)...)
			return [][]byte{foreign.initial(cryptoFrame(0, garbage)), vn, short, b.initial(cryptoFrame(0, hello[:1000])),
				foreign.initial(cryptoFrame(1000, garbage[1000:])), b.initial(cryptoFrame(1000, hello[1000:]))}
		}, 5, true},
		{"connection close stops", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			return [][]byte{b.initial(cryptoFrame(0, hello[:1000]), cc), b.initial(cryptoFrame(1000, hello[1000:]))}
		}, -1, true},
		{"gives up after 10 initials", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			var ds [][]byte
			for range 10 {
				ds = append(ds, b.initial(ping))
			}
			return append(ds, b.initial(cryptoFrame(0, hello)))
		}, -1, true},
		{"crypto beyond 64 KiB", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			return [][]byte{b.initial(cryptoFrame(MaxCrypto-10, hello[:100])), b.initial(cryptoFrame(0, hello))}
		}, -1, true},
		{"not a client hello", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			return [][]byte{b.initial(cryptoFrame(0, []byte{2, 0, 0, 10}))}
		}, -1, true},
		{"unknown frame ends the packet", func(v uint32) [][]byte {
			b := &builder{t: t, version: v, dcid: odcid}
			return [][]byte{b.initial([]byte{0x08}, cryptoFrame(0, hello)), b.initial(cryptoFrame(0, hello))}
		}, 1, true},
	}
	for _, version := range []uint32{Version1, Version2} {
		for _, tt := range tests {
			t.Run(versionName(version)+"/"+tt.name, func(t *testing.T) {
				var f Flow
				got := -1
				for i, d := range tt.datagrams(version) {
					h, ok := f.Handle(d)
					if !ok {
						continue
					}
					if got >= 0 {
						t.Fatalf("second hello at datagram %d", i)
					}
					got = i
					if !bytes.Equal(h, hello) {
						t.Fatalf("wrong hello bytes at datagram %d", i)
					}
				}
				if got != tt.at {
					t.Errorf("hello at datagram %d, want %d", got, tt.at)
				}
				if f.Done() != tt.done {
					t.Errorf("done = %v, want %v", f.Done(), tt.done)
				}
			})
		}
	}
}

func versionName(v uint32) string {
	if v == Version2 {
		return "v2"
	}
	return "v1"
}

func TestVersionChangeStartsOver(t *testing.T) {
	hello := testHello(1500)
	b1 := &builder{t: t, version: Version1, dcid: []byte{1, 1, 1, 1}}
	b2 := &builder{t: t, version: Version2, dcid: []byte{2, 2, 2, 2}}
	var f Flow
	for i, d := range [][]byte{
		b1.initial(cryptoFrame(0, testHello(1500)[:700])),
		b2.initial(cryptoFrame(0, hello[:1000])),
		b2.initial(cryptoFrame(1000, hello[1000:])),
	} {
		h, ok := f.Handle(d)
		if ok != (i == 2) || (ok && !bytes.Equal(h, hello)) {
			t.Fatalf("datagram %d: ok=%v", i, ok)
		}
	}
}

func TestLooksLikeInitial(t *testing.T) {
	b := &builder{t: t, version: Version1, dcid: []byte{1, 2, 3, 4}}
	good := b.initial(cryptoFrame(0, testHello(100)))
	tests := []struct {
		name string
		d    []byte
		want bool
	}{
		{"initial", good, true},
		{"fixed bit greased", append([]byte{good[0] &^ 0x40}, good[1:]...), true},
		{"short header", append([]byte{0x40}, good[1:]...), false},
		{"handshake", longPacket(Version1, kindHandshake, 40), false},
		{"unknown version", append(append([]byte{0xc0}, 0x51, 0x30, 0x35, 0x30), good[5:]...), false},
		{"truncated", good[:30], false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		if got := LooksLikeInitial(tt.d); got != tt.want {
			t.Errorf("%s: LooksLikeInitial = %v", tt.name, got)
		}
	}
}

func TestFlowHandleNoAllocs(t *testing.T) {
	hello := testHello(1800)
	b := &builder{t: t, version: Version1, dcid: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	d1, d2 := b.initial(cryptoFrame(0, hello[:1100])), b.initial(cryptoFrame(1100, hello[1100:]))
	var f Flow
	f.Handle(d1)
	f.Handle(d2)
	keys := f.keys
	allocs := testing.AllocsPerRun(100, func() {
		f.Reset()
		f.keys, f.haveKeys, f.version = keys, true, Version1 // keys derived once per flow
		f.odcidLen = copy(f.odcid[:], b.dcid)
		f.Handle(d1)
		if _, ok := f.Handle(d2); !ok {
			t.Fatal("no hello")
		}
	})
	if allocs != 0 {
		t.Errorf("Handle allocates %.1f times per flow with keys, want 0", allocs)
	}
}

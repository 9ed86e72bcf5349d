package sniff

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/guardd/guardd/characteristics/tlsfp"
	"github.com/guardd/guardd/ingest/capture"
)

// FuzzAppendJSON checks that every record is valid JSON whose strings round
// trip (invalid UTF-8 becomes U+FFFD, as with encoding/json).
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"example.test", "a\"b\\c", "\x00\x1f\x7f", "\xff\xfe", "é\u2028x", "/p?q=1&r=<>"} {
		f.Add(s, "GET")
	}
	f.Fuzz(func(t *testing.T, s, m string) {
		if len(s) > 4096 || len(m) > 64 {
			return
		}
		for _, proto := range []string{ProtoTLS, ProtoHTTP} {
			r := Record{Proto: proto, Frame: 7, Src: netip.MustParseAddr("::1"), Dst: netip.MustParseAddr("10.1.2.3"),
				Fingerprint: tlsfp.Fingerprint{SNI: s, JA3: s}, Method: m, Path: s}
			b := r.AppendJSON(nil)
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			want, _ := json.Marshal(s)
			var ws string
			json.Unmarshal(want, &ws)
			key := "sni"
			if proto == ProtoHTTP {
				key = "path"
			}
			if v[key] != ws {
				t.Fatalf("%s = %q, want %q", key, v[key], ws)
			}
		}
	})
}

// FuzzSniffer feeds arbitrary bytes as the payloads of a client's TCP
// segments (in a fuzzed order) and as a UDP datagram: no panic, and the
// flow table stays within its cap.
func FuzzSniffer(f *testing.F) {
	hello := clientHello(f, "example.test")
	f.Add(hello, uint8(3), uint8(0))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), uint8(2), uint8(1))
	f.Add([]byte("CONNECT a:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00"), uint8(4), uint8(2))
	f.Add(append([]byte{5, 1, 0, 5, 1, 0, 1, 1, 2, 3, 4, 1, 187}, hello...), uint8(5), uint8(3))
	f.Add([]byte{0x80, 0x2e, 0x01, 0x03, 0x01}, uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, payload []byte, parts, order uint8) {
		if len(payload) > 16<<10 {
			return
		}
		n := int(parts%8) + 1
		step := len(payload)/n + 1
		var frames [][]byte
		frames = append(frames, tcpFrame(t, cli, srv, fSYN, 99, nil))
		var segs [][]byte
		for off := 0; off < len(payload); off += step {
			end := min(off+step, len(payload))
			segs = append(segs, tcpFrame(t, cli, srv, fPSH, 100+uint32(off), payload[off:end]))
		}
		if order&1 == 1 {
			for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
				segs[i], segs[j] = segs[j], segs[i]
			}
		}
		frames = append(frames, segs...)
		frames = append(frames, udpFrame(t, cli, srv, payload))
		s, err := New(Config{MaxFlows: 4, FlowBytes: 8 << 10}, func(r *Record) { r.AppendJSON(nil) })
		if err != nil {
			t.Fatal(err)
		}
		for i, fr := range frames {
			s.HandlePacket(&capture.Packet{Frame: i + 1, Time: epoch, LinkType: layers.LinkTypeEthernet, Data: fr})
			// Also as a raw frame of another link type.
			s.HandlePacket(&capture.Packet{Frame: i + 1, Time: epoch, LinkType: layers.LinkTypeRaw, Data: payload})
		}
		if st := s.Stats(); st.FlowsActive > 4 {
			t.Fatalf("%d flows active, cap 4", st.FlowsActive)
		}
		s.Close()
	})
}

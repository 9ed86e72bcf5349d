package sniff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/guardd/guardd/cputime"
	"github.com/guardd/guardd/ingest/capture"
)

// want is one expected record: proto, frame, client side, hello index, and a
// substring of its JSON.
type want struct {
	proto  string
	frame  int
	client endpoint
	index  int
	has    string
}

func TestTCPFlows(t *testing.T) {
	hello := clientHello(t, "example.test")
	hello6 := clientHello(t, "v6.example.test")
	n := len(hello)
	p1, p2, p3 := hello[:n/3], hello[n/3:2*n/3], hello[2*n/3:]
	const isn, sisn = 1000, 5000
	c1 := uint32(isn + 1)
	seg := func(off int, b []byte) []byte { return tcpFrame(t, cli, srv, fPSH, c1+uint32(off), b) }
	syn := tcpFrame(t, cli, srv, fSYN, isn, nil)
	synack := tcpFrame(t, srv, cli, fSYNACK, sisn, nil)
	ack := tcpFrame(t, cli, srv, fACK, c1, nil)
	connect := []byte("CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
	socks4a := append([]byte{4, 1, 1, 187, 0, 0, 0, 1, 'u', 0}, "example.test\x00"...)
	banner := []byte("220 mail.example.test ESMTP\r\n")
	starttls := []byte("EHLO client\r\nSTARTTLS\r\n")
	tso := append(bytes.Clone(hello), make([]byte, 60<<10)...)
	tso[len(hello)] = 23 // application data after the hello ends the scan

	tests := []struct {
		name   string
		cfg    Config
		frames [][]byte
		want   []want
	}{
		{"in order", Config{}, [][]byte{syn, synack, ack, seg(0, hello)},
			[]want{{"tls", 4, cli, 1, `"sni":"example.test"`}}},
		{"split in 3, reversed", Config{}, [][]byte{syn, synack, ack, seg(2*(n/3), p3), seg(n/3, p2), seg(0, p1)},
			[]want{{"tls", 6, cli, 1, ""}}},
		{"no SYN, reversed", Config{}, [][]byte{seg(2*(n/3), p3), seg(n/3, p2), seg(0, p1)},
			[]want{{"tls", 3, cli, 1, ""}}},
		{"retransmitted", Config{}, [][]byte{syn, seg(0, hello), seg(0, hello), seg(0, p1)},
			[]want{{"tls", 2, cli, 1, ""}}},
		{"overlapping halves", Config{}, [][]byte{syn, seg(0, hello[:n/2+7]), seg(n/2, hello[n/2:])},
			[]want{{"tls", 3, cli, 1, ""}}},
		{"overlap keeps first copy", Config{}, [][]byte{syn, seg(n/2, hello[n/2:]), seg(0, append(bytes.Clone(hello[:n/2]), 0xff, 0xff, 0xff))},
			[]want{{"tls", 3, cli, 1, ""}}},
		{"data in SYN (TCP Fast Open)", Config{}, [][]byte{tcpFrame(t, cli, srv, fSYN, isn, hello), synack},
			[]want{{"tls", 1, cli, 1, ""}}},
		{"missing segment", Config{}, [][]byte{syn, seg(0, p1), seg(2*(n/3), p3)}, nil},
		{"SYN on closed 4-tuple starts a new flow", Config{}, [][]byte{
			syn, seg(0, hello), tcpFrame(t, cli, srv, fFIN, c1+uint32(n), nil),
			tcpFrame(t, cli, srv, fSYN, 90000, nil), tcpFrame(t, cli, srv, fPSH, 90001, hello)},
			[]want{{"tls", 2, cli, 1, ""}, {"tls", 5, cli, 1, ""}}},
		{"client on port 443 (content decides)", Config{},
			[][]byte{tcpFrame(t, srv, cli, fSYN, isn, nil), tcpFrame(t, srv, cli, fPSH, c1, hello)},
			[]want{{"tls", 2, srv, 1, ""}}},
		{"server speaks first, STARTTLS", Config{}, [][]byte{syn, synack,
			tcpFrame(t, srv, cli, fPSH, sisn+1, banner), seg(0, starttls), seg(len(starttls), hello)},
			[]want{{"tls", 5, cli, 1, ""}}},
		{"CONNECT then TLS in one segment", Config{}, [][]byte{syn, seg(0, append(bytes.Clone(connect), hello...))},
			[]want{{"http", 2, cli, 0, `"method":"CONNECT","path":"example.test:443"`}, {"tls", 2, cli, 1, ""}}},
		{"SOCKS4a then TLS", Config{}, [][]byte{syn, seg(0, socks4a), seg(len(socks4a), hello)},
			[]want{{"tls", 3, cli, 1, ""}}},
		{"TSO segment of 60 KiB", Config{}, [][]byte{syn, seg(0, tso)},
			[]want{{"tls", 2, cli, 1, ""}}},
		{"over the byte budget", Config{FlowBytes: 100}, [][]byte{syn, seg(0, hello)}, nil},
		{"IPv6", Config{}, [][]byte{tcpFrame(t, cl6, sv6, fSYN, isn, nil), tcpFrame(t, cl6, sv6, fPSH, c1, hello6)},
			[]want{{"tls", 2, cl6, 1, `"sni":"v6.example.test"`}}},
		{"HTTP keep-alive, a line per segment", Config{}, [][]byte{syn,
			seg(0, []byte("GET /a?b=1 HTTP/1.1\r\n")), seg(21, []byte("Host: x\r\nCookie: k=v\r\n")), seg(43, []byte("\r\nPOST /p HTTP/1.0\nContent-Length: 3\n\nabc"))},
			[]want{{"http", 4, cli, 0, `"path":"/a?b=1","ja4h":"ge11cn01`}, {"http", 4, cli, 0, `"method":"POST"`}}},
		{"JA4H off", Config{DisableJA4H: true}, [][]byte{syn, seg(0, []byte("GET / HTTP/1.1\r\n\r\n"))},
			[]want{{"http", 2, cli, 0, `"ja4h":"","ja4h_r":""`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st := run(t, tc.cfg, tc.frames)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d records, want %d: %+v (stats %+v)", len(got), len(tc.want), got, st)
			}
			for i, w := range tc.want {
				r := got[i]
				if r.Proto != w.proto || r.Frame != w.frame || r.Src != w.client.addr || r.SrcPort != w.client.port || r.HelloIndex != w.index {
					t.Errorf("record %d = %s frame %d %v:%d index %d, want %s frame %d %v:%d index %d",
						i, r.Proto, r.Frame, r.Src, r.SrcPort, r.HelloIndex, w.proto, w.frame, w.client.addr, w.client.port, w.index)
				}
				if j := string(r.AppendJSON(nil)); !bytes.Contains([]byte(j), []byte(w.has)) {
					t.Errorf("record %d: %s lacks %s", i, j, w.has)
				}
				if r.Proto == ProtoTLS && (r.JA4 == "" || r.JA3Hash == "") {
					t.Errorf("record %d: empty fingerprint %+v", i, r.Fingerprint)
				}
			}
		})
	}
}

func TestSSDP(t *testing.T) {
	msg := []byte("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n")
	got, _ := run(t, Config{}, [][]byte{udpFrame(t, cli, endpoint{srv.addr, 1900}, msg)})
	if len(got) != 1 || got[0].Method != "M-SEARCH" || got[0].Path != "*" || got[0].JA4H[:4] != "ms11" {
		t.Fatalf("got %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{MaxFlows: -1}, {FlowBytes: -1}, {FlowBytes: 1 << 30}, {IdleTimeout: -time.Second}} {
		if _, err := New(c, func(*Record) {}); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("New with nil emit accepted")
	}
}

func TestIdleExpiry(t *testing.T) {
	var got []Record
	s, err := New(Config{IdleTimeout: time.Second}, func(r *Record) { got = append(got, *r) })
	if err != nil {
		t.Fatal(err)
	}
	hello := clientHello(t, "example.test")
	feed := func(frame int, at time.Duration, d []byte) {
		s.HandlePacket(&capture.Packet{Frame: frame, Time: epoch.Add(at), LinkType: layers.LinkTypeEthernet, Data: d})
	}
	feed(1, 0, tcpFrame(t, cli, srv, fSYN, 1, nil))
	feed(2, 0, tcpFrame(t, cli, srv, fPSH, 2, hello[:50]))
	if n := s.Stats().FlowsActive; n != 1 {
		t.Fatalf("active = %d, want 1", n)
	}
	s.Flush(epoch.Add(2 * time.Second))
	if st := s.Stats(); st.FlowsActive != 0 || st.FlowsExpired != 1 {
		t.Fatalf("after flush: %+v", st)
	}
	// The rest of the hello after expiry starts a mid-stream flow: no record.
	feed(3, 3*time.Second, tcpFrame(t, cli, srv, fPSH, 52, hello[50:]))
	if len(got) != 0 {
		t.Fatalf("record from an expired flow: %+v", got)
	}
}

// TestSweepByPacketTime: without a Flush call, packet time passing the idle
// timeout expires idle flows, once a second of packet time at most.
func TestSweepByPacketTime(t *testing.T) {
	s, err := New(Config{IdleTimeout: time.Second}, func(*Record) {})
	if err != nil {
		t.Fatal(err)
	}
	other := endpoint{cli.addr, cli.port + 1}
	feed := func(frame int, at time.Duration, from endpoint) {
		s.HandlePacket(&capture.Packet{Frame: frame, Time: epoch.Add(at), LinkType: layers.LinkTypeEthernet,
			Data: tcpFrame(t, from, srv, fSYN, 1, nil)})
	}
	feed(1, 0, cli)
	feed(2, 900*time.Millisecond, other) // under a second since the first sweep mark: no sweep
	if st := s.Stats(); st.FlowsActive != 2 || st.FlowsExpired != 0 {
		t.Fatalf("before the timeout: %+v", st)
	}
	feed(3, 2500*time.Millisecond, other) // sweeps: cli idle 2.5 s, other 1.6 s
	if st := s.Stats(); st.FlowsActive != 1 || st.FlowsExpired != 2 {
		t.Fatalf("after the timeout: active %d expired %d, want 1 and 2", st.FlowsActive, st.FlowsExpired)
	}
}

// TestFloodBounded sends distinct half-open connections past MaxFlows: the
// table stays at its cap, evicting the oldest.
func TestFloodBounded(t *testing.T) {
	const max = 1000
	s, err := New(Config{MaxFlows: max}, func(*Record) {})
	if err != nil {
		t.Fatal(err)
	}
	frames := floodFrames(t, 5000)
	var p capture.Packet
	for i, f := range frames {
		p = capture.Packet{Frame: i + 1, Time: epoch, LinkType: layers.LinkTypeEthernet, Data: f}
		s.HandlePacket(&p)
	}
	st := s.Stats()
	if st.FlowsActive != max || st.FlowsEvicted != 5000-max {
		t.Fatalf("active %d evicted %d, want %d and %d", st.FlowsActive, st.FlowsEvicted, max, 5000-max)
	}
}

// floodFrames returns n SYNs of distinct flows, built by patching one frame.
func floodFrames(t testing.TB, n int) [][]byte {
	base := tcpFrame(t, cli, srv, fSYN, 1, nil)
	out := make([][]byte, n)
	for i := range out {
		f := bytes.Clone(base)
		binary.BigEndian.PutUint16(f[14+12+2:], uint16(i>>16)) // IPv4 source, low half
		binary.BigEndian.PutUint16(f[14+20:], uint16(i))       // TCP source port
		out[i] = f
	}
	return out
}

func TestHandlePacketAllocs(t *testing.T) {
	s, err := New(Config{}, func(*Record) {})
	if err != nil {
		t.Fatal(err)
	}
	// Steady state: ACKs of a known flow, and packets of unknown flows
	// without payload.
	frames := [][]byte{
		tcpFrame(t, cli, srv, fSYN, 1, nil),
		tcpFrame(t, srv, cli, fSYNACK, 9, nil),
		tcpFrame(t, cli, srv, fACK, 2, nil),
		tcpFrame(t, endpoint{cli.addr, 1}, srv, fACK, 2, nil),
	}
	p := capture.Packet{Time: epoch, LinkType: layers.LinkTypeEthernet}
	for _, f := range frames {
		p.Data = f
		s.HandlePacket(&p)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		p.Frame++
		p.Data = frames[2+p.Frame%2]
		s.HandlePacket(&p)
	})
	if allocs != 0 {
		t.Errorf("HandlePacket allocates %.1f times per packet", allocs)
	}
}

func BenchmarkHandlePacket(b *testing.B) {
	// A mix like an edge link: many connections, mostly ACKs and data of
	// flows whose hellos are done.
	const flows = 4096
	hello := clientHello(b, "example.test")
	var frames [][]byte
	for i := range flows {
		c := endpoint{cli.addr, uint16(10000 + i)}
		frames = append(frames, tcpFrame(b, c, srv, fSYN, 1, nil), tcpFrame(b, srv, c, fSYNACK, 9, nil),
			tcpFrame(b, c, srv, fPSH, 2, hello))
	}
	for i := range flows {
		c := endpoint{cli.addr, uint16(10000 + i)}
		frames = append(frames, tcpFrame(b, srv, c, fPSH, 10, make([]byte, 1200)), tcpFrame(b, c, srv, fACK, 2+uint32(len(hello)), nil))
	}
	s, err := New(Config{}, func(*Record) {})
	if err != nil {
		b.Fatal(err)
	}
	p := capture.Packet{Time: epoch, LinkType: layers.LinkTypeEthernet}
	for _, f := range frames[:3*flows] {
		p.Data = f
		s.HandlePacket(&p)
	}
	steady := frames[3*flows:]
	b.ReportAllocs()
	i := 0
	cpu0 := cputime.Process()
	for b.Loop() {
		p.Data = steady[i]
		s.HandlePacket(&p)
		if i++; i == len(steady) {
			i = 0
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	// On a shared machine wall time includes waiting for a core; CPU time
	// (the process's, GC included) does not.
	b.ReportMetric(float64(b.N)/(cputime.Since(cpu0)).Seconds(), "pkts/cpu-s")
}

// BenchmarkFlood reports the heap held by a table full of half-open
// connections: 1M distinct SYNs at the default cap, and past a small cap.
func BenchmarkFlood(b *testing.B) {
	for _, max := range []int{1 << 16, DefaultMaxFlows} {
		b.Run(fmt.Sprintf("cap=%d", max), func(b *testing.B) {
			frames := floodFrames(b, 1)
			f := frames[0]
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s, _ := New(Config{MaxFlows: max}, func(*Record) {})
				p := capture.Packet{Time: epoch, LinkType: layers.LinkTypeEthernet, Data: f}
				for i := range 1 << 20 {
					binary.BigEndian.PutUint16(f[14+12+2:], uint16(i>>16))
					binary.BigEndian.PutUint16(f[14+20:], uint16(i))
					s.HandlePacket(&p)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				st := s.Stats()
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "heap-bytes")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(st.FlowsActive), "bytes/flow")
				b.ReportMetric(float64(st.FlowsActive), "flows")
				runtime.KeepAlive(s)
			}
		})
	}
}

// TestZeroTime: records without a time (pcapng SPBs) neither break flow ages
// nor expire flows.
func TestZeroTime(t *testing.T) {
	var got []Record
	s, err := New(Config{}, func(r *Record) { got = append(got, *r) })
	if err != nil {
		t.Fatal(err)
	}
	hello := clientHello(t, "example.test")
	for i, d := range [][]byte{tcpFrame(t, cli, srv, fSYN, 1, nil), tcpFrame(t, cli, srv, fPSH, 2, hello[:40]), tcpFrame(t, cli, srv, fPSH, 42, hello[40:])} {
		at := time.Time{}
		if i == 1 {
			at = epoch
		}
		s.HandlePacket(&capture.Packet{Frame: i + 1, Time: at, LinkType: layers.LinkTypeEthernet, Data: d})
	}
	if len(got) != 1 || got[0].Frame != 3 || s.Stats().FlowsExpired != 0 {
		t.Fatalf("got %+v, stats %+v", got, s.Stats())
	}
}

package sniff

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/tlsfp"
)

func TestJoin(t *testing.T) {
	ip := netip.MustParseAddr("192.0.2.7")
	mapped := netip.MustParseAddr("::ffff:192.0.2.7")
	tlsRec := &Record{Proto: ProtoTLS, Time: epoch, Src: ip, SrcPort: 5555,
		Fingerprint: tlsfp.Fingerprint{SNI: "example.test", ALPN: "h2", JA3Hash: "j3", JA3NHash: "j3n", JA4: "t13d"}}
	hrr := &Record{Proto: ProtoTLS, Time: epoch.Add(time.Millisecond), Src: ip, SrcPort: 5555,
		Fingerprint: tlsfp.Fingerprint{SNI: "example.test", JA3Hash: "second", JA4: "second"}}
	req := func(method, path, ja4h string, at time.Duration) *Record {
		return &Record{Proto: ProtoHTTP, Time: epoch.Add(at), Src: ip, SrcPort: 5555, Method: method, Path: path, JA4H: ja4h}
	}
	j := NewJoin(time.Minute, 100)
	j.Put(tlsRec)
	j.Put(hrr)
	j.Put(req("GET", "/a?x=1", "h1", time.Second))
	j.Put(req("GET", "/b", "h2", 2*time.Second))
	j.Put(req("GET", "/a?x=1", "h3", 3*time.Second))

	tests := []struct {
		name      string
		ev        characteristics.Event
		ok        bool
		ja4, ja4h string
	}{
		{"first request", characteristics.Event{IP: ip, Port: 5555, Time: epoch.Add(2 * time.Second), Method: "GET", Path: "/a", Query: "x=1"}, true, "t13d", "h1"},
		{"keep-alive order", characteristics.Event{IP: mapped, Port: 5555, Time: epoch.Add(3 * time.Second), Method: "GET", Path: "/b"}, true, "t13d", "h2"},
		{"third", characteristics.Event{IP: ip, Port: 5555, Time: epoch.Add(4 * time.Second), Method: "GET", Path: "/a", Query: "x=1"}, true, "t13d", "h3"},
		{"requests used up, TLS still joins", characteristics.Event{IP: ip, Port: 5555, Time: epoch.Add(5 * time.Second), Method: "GET", Path: "/a", Query: "x=1"}, true, "t13d", ""},
		{"other port", characteristics.Event{IP: ip, Port: 5556, Time: epoch, Method: "GET", Path: "/b"}, false, "", ""},
		{"too late", characteristics.Event{IP: ip, Port: 5555, Time: epoch.Add(time.Hour), Method: "GET", Path: "/b"}, false, "", ""},
		{"no port", characteristics.Event{IP: ip, Time: epoch}, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev
			if ok := j.Enrich(&ev); ok != tc.ok || ev.TLS.JA4 != tc.ja4 || ev.JA4H != tc.ja4h {
				t.Errorf("Enrich = %v, ja4 %q ja4h %q; want %v, %q, %q", ok, ev.TLS.JA4, ev.JA4H, tc.ok, tc.ja4, tc.ja4h)
			}
			if tc.ok && (ev.TLS.SNI != "example.test" || ev.TLS.ALPN != "h2" || ev.TLS.JA3 != "j3" || ev.TLS.JA3N != "j3n") {
				t.Errorf("TLS = %+v", ev.TLS)
			}
		})
	}
}

func TestJoinBounded(t *testing.T) {
	j := NewJoin(time.Minute, 10)
	for i := range 100 {
		j.Put(&Record{Proto: ProtoTLS, Time: epoch, Src: cli.addr, SrcPort: uint16(i + 1)})
	}
	if n := j.Len(); n != 10 {
		t.Fatalf("Len = %d, want 10", n)
	}
	// Entries older than ttl go when newer records arrive.
	j.Put(&Record{Proto: ProtoTLS, Time: epoch.Add(2 * time.Minute), Src: cli.addr, SrcPort: 1000})
	if n := j.Len(); n != 1 {
		t.Fatalf("Len after ttl = %d, want 1", n)
	}
}

func TestJoinConcurrent(t *testing.T) {
	j := NewJoin(time.Minute, 1000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				port := uint16(g*1000 + i + 1)
				j.Put(&Record{Proto: ProtoHTTP, Time: epoch, Src: cli.addr, SrcPort: port, Method: "GET", Path: "/", JA4H: "x"})
				ev := characteristics.Event{IP: cli.addr, Port: port, Time: epoch, Method: "GET", Path: "/"}
				j.Enrich(&ev)
			}
		}()
	}
	wg.Wait()
}

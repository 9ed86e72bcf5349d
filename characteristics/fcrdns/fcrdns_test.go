package fcrdns_test

import (
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/guardd/guardd/characteristics/fcrdns"
	"github.com/guardd/guardd/testwait"
)

// server is a DNS server on loopback that answers PTR, A and AAAA from its
// tables, drops the queries for names in silent, and counts what it gets.
type server struct {
	addr    string
	ptr     map[string]string // reverse name -> PTR target
	fwd     map[string]string // name -> address
	silent  map[string]bool
	queries atomic.Int64
}

func startServer(t *testing.T, ptr map[string]string, fwd map[string]string, silent ...string) *server {
	t.Helper()
	s := &server{ptr: map[string]string{}, fwd: map[string]string{}, silent: map[string]bool{}}
	for a, name := range ptr {
		rev, err := dns.ReverseAddr(a)
		if err != nil {
			t.Fatal(err)
		}
		s.ptr[rev] = dns.Fqdn(name)
	}
	for name, a := range fwd {
		s.fwd[dns.Fqdn(name)] = a
	}
	for _, a := range silent {
		rev, _ := dns.ReverseAddr(a)
		s.silent[rev] = true
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = pc.LocalAddr().String()
	ready := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: func() { close(ready) }}
	go srv.ActivateAndServe()
	<-ready
	t.Cleanup(func() { srv.Shutdown() })
	return s
}

func (s *server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	s.queries.Add(1)
	q := r.Question[0]
	if s.silent[strings.ToLower(q.Name)] {
		return // no answer at all
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	switch q.Qtype {
	case dns.TypePTR:
		if name, ok := s.ptr[strings.ToLower(q.Name)]; ok {
			m.Answer = append(m.Answer, &dns.PTR{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60}, Ptr: name})
		} else {
			m.Rcode = dns.RcodeNameError
		}
	case dns.TypeA, dns.TypeAAAA:
		a, ok := s.fwd[strings.ToLower(q.Name)]
		if !ok {
			m.Rcode = dns.RcodeNameError
			break
		}
		ip := netip.MustParseAddr(a)
		hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 60}
		if q.Qtype == dns.TypeA && ip.Is4() {
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: ip.AsSlice()})
		}
		if q.Qtype == dns.TypeAAAA && ip.Is6() {
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()})
		}
	default:
		m.Rcode = dns.RcodeNotImplemented
	}
	w.WriteMsg(m)
}

var google = []string{"googlebot.com", "google.com", "googleusercontent.com"}

// settle polls Check until it leaves Pending or the deadline passes.
func settle(t *testing.T, v *fcrdns.Verifier, a netip.Addr, suffixes []string, now time.Time) fcrdns.Verdict {
	t.Helper()
	var got fcrdns.Verdict
	testwait.For(10*time.Second, func() bool {
		got = v.Check(a, suffixes, now)
		return got != fcrdns.Pending
	})
	return got
}

func TestVerdicts(t *testing.T) {
	srv := startServer(t,
		map[string]string{
			"66.249.66.1":       "crawl-66-249-66-1.googlebot.com",
			"2001:4860:4801::5": "crawl-2001-4860-4801--5.googlebot.com",
			"203.0.113.7":       "crawl-203-0-113-7.googlebot.com", // claims the domain, resolves elsewhere
			"198.51.100.9":      "host.evil.example",
			"5.255.253.10":      "5-255-253-10.spider.yandex.com",
			"192.0.2.77":        "notgooglebot.com", // a suffix without its dot
		},
		map[string]string{
			"crawl-66-249-66-1.googlebot.com":       "66.249.66.1",
			"crawl-2001-4860-4801--5.googlebot.com": "2001:4860:4801::5",
			"crawl-203-0-113-7.googlebot.com":       "192.0.2.1",
			"5-255-253-10.spider.yandex.com":        "5.255.253.10",
			"notgooglebot.com":                      "192.0.2.77",
		},
		"198.18.0.1")
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	v, err := fcrdns.New(fcrdns.Config{Resolver: srv.addr, QPS: 1000, Timeout: 300 * time.Millisecond, RetryTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, c := range []struct {
		name     string
		addr     string
		suffixes []string
		want     fcrdns.Verdict
	}{
		{"verified IPv4", "66.249.66.1", google, fcrdns.Verified},
		{"verified IPv6", "2001:4860:4801::5", google, fcrdns.Verified},
		{"verified yandex", "5.255.253.10", []string{"yandex.ru", "yandex.net", "yandex.com"}, fcrdns.Verified},
		{"forward does not confirm", "203.0.113.7", google, fcrdns.Failed},
		{"other domain", "198.51.100.9", google, fcrdns.Failed},
		{"suffix without a dot", "192.0.2.77", google, fcrdns.Failed},
		{"no PTR", "192.0.2.200", google, fcrdns.Failed},
		{"right name, wrong crawler", "66.249.66.1", []string{"search.msn.com"}, fcrdns.Verified}, // cached from the first case
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := settle(t, v, netip.MustParseAddr(c.addr), c.suffixes, now); got != c.want {
				t.Errorf("%s: got %v, want %v", c.addr, got, c.want)
			}
		})
	}
	// No answer: pending (the name is not judged), asked again only after
	// RetryTTL.
	silent := netip.MustParseAddr("198.18.0.1")
	if got := v.Check(silent, google, now); got != fcrdns.Pending {
		t.Fatalf("unanswered: got %v, want pending", got)
	}
	before := srv.queries.Load()
	testwait.Until(t, 10*time.Second, "the unanswered lookup to be sent", func() bool { return srv.queries.Load() != before })
	if got := v.Check(silent, google, now.Add(30*time.Second)); got != fcrdns.Pending {
		t.Errorf("unanswered, within RetryTTL: got %v, want pending", got)
	}
	// Expiry is on the caller's clock: a failed verdict is asked again
	// after NegativeTTL (default 1h).
	bad := netip.MustParseAddr("198.51.100.9")
	if got := v.Check(bad, google, now.Add(59*time.Minute)); got != fcrdns.Failed {
		t.Errorf("failed within the negative TTL: got %v", got)
	}
	if got := v.Check(bad, google, now.Add(2*time.Hour)); got != fcrdns.Pending {
		t.Errorf("failed after the negative TTL: got %v, want pending (asked again)", got)
	}
}

// TestFlood: a flood of distinct addresses claiming to be Googlebot keeps
// the cache under MaxEntries and the queries under the QPS budget.
func TestFlood(t *testing.T) {
	srv := startServer(t, nil, nil)
	const qps, maxEntries = 50, 1000
	v, err := fcrdns.New(fcrdns.Config{Resolver: srv.addr, QPS: qps, MaxEntries: maxEntries, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	start := time.Now()
	for i := range 200_000 {
		a := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		if i >= 1<<16 {
			a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)})
		}
		if got := v.Check(a, google, now); got != fcrdns.Pending {
			t.Fatalf("%v: %v before any answer", a, got)
		}
		if n := v.Len(); n > maxEntries {
			t.Fatalf("cache holds %d addresses, over %d", n, maxEntries)
		}
	}
	// Let the workers run a while, then stop them and count.
	testwait.For(10*time.Second, func() bool { return srv.queries.Load() >= 20 })
	v.Close()
	elapsed := time.Since(start).Seconds()
	// Every address answers NXDOMAIN to its PTR: one query per lookup.
	if q := srv.queries.Load(); float64(q) > qps*elapsed+2 {
		t.Errorf("%d queries in %.2fs: over %d a second", q, elapsed, qps)
	} else {
		t.Logf("%d queries in %.2fs (budget %d/s); cache %d", q, elapsed, qps, v.Len())
	}
	if n := v.Len(); n > maxEntries {
		t.Errorf("cache holds %d addresses, over %d", n, maxEntries)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  fcrdns.Config
		want string
	}{
		{fcrdns.Config{}, "resolver: empty"},
		{fcrdns.Config{Resolver: "127.0.0.1"}, "want host:port"},
		{fcrdns.Config{Resolver: "127.0.0.1:53", QPS: -1}, "negative"},
	} {
		if _, err := fcrdns.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

package characteristics

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/testwait"
	"github.com/miekg/dns"
)

// dnsServer answers PTR and A from ptr (address -> name) on loopback and
// drops the queries for the addresses in silent.
func dnsServer(t *testing.T, ptr map[string]string, silent ...string) string {
	t.Helper()
	rev := map[string]string{}
	fwd := map[string]netip.Addr{}
	for a, name := range ptr {
		r, _ := dns.ReverseAddr(a)
		rev[r] = dns.Fqdn(name)
		fwd[dns.Fqdn(name)] = netip.MustParseAddr(a)
	}
	quiet := map[string]bool{}
	for _, a := range silent {
		r, _ := dns.ReverseAddr(a)
		quiet[r] = true
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(ready) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		q := r.Question[0]
		name := strings.ToLower(q.Name)
		if quiet[name] {
			return
		}
		m := new(dns.Msg)
		m.SetReply(r)
		hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 60}
		switch {
		case q.Qtype == dns.TypePTR && rev[name] != "":
			m.Answer = append(m.Answer, &dns.PTR{Hdr: hdr, Ptr: rev[name]})
		case q.Qtype == dns.TypeA && fwd[name].Is4():
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: fwd[name].AsSlice()})
		case q.Qtype == dns.TypeAAAA && fwd[name].Is6():
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: fwd[name].AsSlice()})
		case q.Qtype == dns.TypePTR || !fwd[name].IsValid():
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	<-ready
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

// TestCrawlerVerification: outside a crawler's ranges, its name is verified
// by reverse DNS when the resolver confirms it, judged (left unverified)
// when the lookup fails, and pending — never judged — while the lookup is
// unanswered or when there is no resolver to ask.
func TestCrawlerVerification(t *testing.T) {
	table := filepath.Join(t.TempDir(), "crawlers.txt")
	os.WriteFile(table, []byte(`googlebot ua Googlebot
googlebot range 66.249.64.0/19
googlebot rdns googlebot.com
yandex ua YandexBot
yandex range 5.255.192.0/18
yandex rdns yandex.com
yandex ranges partial
`), 0o644)
	addr := dnsServer(t, map[string]string{
		"66.249.100.9": "crawl-66-249-100-9.googlebot.com", // outside the ranges above
		"2a02:6b8::5":  "spider-2a02-6b8--5.yandex.com",
		"198.51.100.4": "vps.example.net",
	}, "203.0.113.99")
	const gbot, ybot = "Mozilla/5.0 (compatible; Googlebot/2.1)", "Mozilla/5.0 (compatible; YandexBot/3.0)"
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

	with, err := NewEnricher(EnrichConfig{CrawlerRanges: table, Resolver: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Close()
	without, err := NewEnricher(EnrichConfig{CrawlerRanges: table})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Close()
	bot := func(en *Enricher, ua, ip string, settle bool) Bot {
		var b Bot
		testwait.For(10*time.Second, func() bool {
			e := Event{Time: now, IP: netip.MustParseAddr(ip), UserAgent: ua}
			en.Enrich(&e)
			b = e.Bot
			return !settle || !b.Pending
		})
		return b
	}
	for _, c := range []struct {
		name   string
		en     *Enricher
		ua, ip string
		settle bool
		want   Bot
	}{
		{"in the ranges: no lookup", with, gbot, "66.249.66.1", false, Bot{Name: "googlebot", Verified: true}},
		{"confirmed by reverse DNS", with, gbot, "66.249.100.9", true, Bot{Name: "googlebot", Verified: true}},
		{"confirmed by reverse DNS, IPv6", with, ybot, "2a02:6b8::5", true, Bot{Name: "yandex", Verified: true}},
		{"another domain", with, gbot, "198.51.100.4", true, Bot{Name: "googlebot"}},
		{"no PTR", with, ybot, "192.0.2.8", true, Bot{Name: "yandex"}},
		{"first request, before the answer", with, ybot, "203.0.113.99", false, Bot{Name: "yandex", Pending: true}},
		{"no resolver, complete ranges", without, gbot, "66.249.100.9", false, Bot{Name: "googlebot"}},
		{"no resolver, partial ranges", without, ybot, "2a02:6b8::5", false, Bot{Name: "yandex", Pending: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := bot(c.en, c.ua, c.ip, c.settle); got != c.want {
				t.Errorf("%s from %s: %+v, want %+v", c.ua, c.ip, got, c.want)
			}
		})
	}
	// The unanswered lookup stays pending (its timeout passes, the name is
	// still not judged).
	if got := bot(with, ybot, "203.0.113.99", false); !got.Pending || got.Verified {
		t.Errorf("unanswered: %+v, want pending", got)
	}
	e := Event{Time: now, IP: netip.MustParseAddr("203.0.113.99"), UserAgent: ybot}
	with.Enrich(&e)
	if in := e.Input()["bot"].(map[string]any); in["pending"] != true {
		t.Errorf("input.bot = %v, want pending", in)
	}
}

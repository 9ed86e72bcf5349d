package characteristics

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics/bots"
)

func TestEnrichBotAndTLSClient(t *testing.T) {
	en, err := NewEnricher(EnrichConfig{})
	if err != nil {
		t.Fatal(err)
	}
	google := "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	memo := new(bots.Memo)
	for _, tc := range []struct {
		ip, ua, ja4    string
		name, verified string
		client         string
	}{
		{"66.249.66.1", google, "", "googlebot", "true", ""},
		{"203.0.113.5", google, "", "googlebot", "", ""},
		{"203.0.113.5", "Mozilla/5.0 Chrome/131.0.0.0", "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", "", "", "library/curl"},
		{"203.0.113.5", "Mozilla/5.0 Chrome/131.0.0.0", "t13d1516h2_aaaaaaaaaaaa_bbbbbbbbbbbb", "", "", ""},
	} {
		e := Event{IP: netip.MustParseAddr(tc.ip), UserAgent: tc.ua}
		en.Enrich(&e)
		for range 2 { // a memo's miss, then its hit
			m := Event{IP: netip.MustParseAddr(tc.ip), UserAgent: tc.ua}
			en.EnrichMemo(&m, memo)
			if m.Bot != e.Bot || m.Prefix != e.Prefix {
				t.Errorf("%s %q: EnrichMemo bot %+v prefix %v, Enrich %+v %v", tc.ip, tc.ua, m.Bot, m.Prefix, e.Bot, e.Prefix)
			}
		}
		e.TLS.JA4 = tc.ja4 // joined after enrichment, as the sniffer does
		for c, want := range map[string]string{"bot.name": tc.name, "bot.verified": tc.verified, "tls.client": tc.client} {
			got, ok := MustParse(c).Str(&e)
			if got != want || ok != (want != "") {
				t.Errorf("%s %q: %s = %q, %v; want %q", tc.ip, tc.ua, c, got, ok, want)
			}
		}
		in := e.Input()
		bot := in["bot"].(map[string]any)
		if v, ok := bot["verified"]; ok != (tc.verified == "true") || (ok && v != true) {
			t.Errorf("input.bot.verified = %v, %v", v, ok)
		}
	}
}

func TestEnrichTableFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "crawlers.txt")
	os.WriteFile(good, []byte("acme ua AcmeBot\nacme range 192.0.2.0/24\n"), 0o644)
	en, err := NewEnricher(EnrichConfig{CrawlerRanges: good})
	if err != nil {
		t.Fatal(err)
	}
	e := Event{IP: netip.MustParseAddr("192.0.2.9"), UserAgent: "AcmeBot/1"}
	en.Enrich(&e)
	if e.Bot != (Bot{Name: "acme", Verified: true}) {
		t.Errorf("bot = %+v", e.Bot)
	}
	bad := filepath.Join(dir, "clients.txt")
	os.WriteFile(bad, []byte("# x\nnot-a-ja4 library x\n"), 0o644)
	if _, err := NewEnricher(EnrichConfig{TLSClients: bad}); err == nil || !strings.Contains(err.Error(), "clients.txt:2:") {
		t.Errorf("bad table: %v", err)
	}
}

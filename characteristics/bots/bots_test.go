package bots

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	c := DefaultCrawlers()
	for _, tc := range []struct {
		ua, addr string
		name     string
		verified bool
	}{
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "66.249.66.1", "googlebot", true},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "203.0.113.9", "googlebot", false},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "2001:4860:4801:10::1", "googlebot", true},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "::ffff:66.249.66.1", "googlebot", true},
		{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", "157.55.39.10", "bingbot", true},
		{"Mozilla/5.0 (compatible; bingbot/2.0)", "66.249.66.1", "bingbot", false},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", "17.241.75.3", "applebot", true},
		{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", "2a03:2880:f0ff::1", "facebook", true},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "66.249.66.1", "", false},
		{"", "66.249.66.1", "", false},
	} {
		name, ok := c.Check(tc.ua, netip.MustParseAddr(tc.addr))
		if name != tc.name || ok != tc.verified {
			t.Errorf("Check(%q, %s) = %q, %v; want %q, %v", tc.ua, tc.addr, name, ok, tc.name, tc.verified)
		}
	}
}

func TestParseCrawlersErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"g ua Googlebot\ng range 66.249.64.0/33\n", "x.txt:2: range \"66.249.64.0/33\""},
		{"g ua Googlebot\n", "x.txt:1: crawler g has no range or rdns line"},
		{"# c\ng range 66.249.64.0/19\n", "x.txt:2: crawler g has no ua line"},
		{"g ua\n", "x.txt:1: want three fields"},
		{"g agent Googlebot\n", "x.txt:1: field \"agent\": accepted: ua, range"},
		{"g range fe80::1%eth0/64\ng ua x\n", "x.txt:1: range"},
		{strings.Repeat("x", maxLine+10) + "\n", "x.txt:1:"},
	} {
		_, err := ParseCrawlers(strings.NewReader(tc.in), "x.txt")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCrawlers(%.40q) = %v; want %q", tc.in, err, tc.want)
		}
	}
}

// TestCheckUnfilteredTokens: a file whose token the cheap filter does not
// know is still matched.
func TestCheckUnfilteredTokens(t *testing.T) {
	c, err := ParseCrawlers(strings.NewReader("acme ua AcmeFetcher\nacme range 192.0.2.0/24\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := c.Check("AcmeFetcher/1.0", netip.MustParseAddr("192.0.2.7")); name != "acme" || !ok {
		t.Fatalf("got %q %v", name, ok)
	}
}

func TestStacks(t *testing.T) {
	s := DefaultStacks()
	for ja4, want := range map[string]string{
		"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6": "library/curl",
		"t13i3111h2_e8f1e7e78f70_b26ce05bbdd6": "library/curl", // no SNI: same stack
		"t13d1312h2_f57a46bbacb6_ab7e3b40a677": "library/go-http",
		"t13d1517h2_8daaf6152771_cb7bf5808d99": "browser/chromium",
		"t13d1516h2_8daaf6152771_e5627efa2ab1": "",
		"garbage":                              "",
	} {
		if got, _ := s.Client(ja4); got != want {
			t.Errorf("Client(%s) = %q, want %q", ja4, got, want)
		}
	}
	var nilStacks *Stacks
	if _, ok := nilStacks.Client("x_y_z"); ok {
		t.Error("nil table knows a stack")
	}
}

func TestParseStacksErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6 tool curl\n", "f:1: kind \"tool\""},
		{"\nnot-a-ja4 library curl\n", "f:2: \"not-a-ja4\" is not a JA4"},
		{"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6 library\n", "f:1: want three fields"},
		{"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6 library a/b\n", "f:1: name \"a/b\""},
		{"t13d3112h2_e8f1e7e78f70_b26ce05bbdd6 library curl\nt13d3112h2_e8f1e7e78f70_b26ce05bbdd6 browser x\n", "f:2: t13d3112h2_e8f1e7e78f70_b26ce05bbdd6 is already library/curl"},
	} {
		_, err := ParseStacks(strings.NewReader(tc.in), "f")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseStacks(%q) = %v; want %q", tc.in, err, tc.want)
		}
	}
}

func TestLookupAllocs(t *testing.T) {
	c, s := DefaultCrawlers(), DefaultStacks()
	a := netip.MustParseAddr("203.0.113.9")
	n := testing.AllocsPerRun(1000, func() {
		c.Check("Mozilla/5.0 (compatible; Googlebot/2.1)", a)
		c.Check("Mozilla/5.0 (Windows NT 10.0) Chrome/131.0.0.0", a)
		s.Client("t13d3112h2_e8f1e7e78f70_b26ce05bbdd6")
	})
	if n != 0 {
		t.Errorf("%v allocs per lookup, want 0", n)
	}
}

func FuzzParseCrawlers(f *testing.F) {
	f.Add(crawlersTxt)
	f.Add([]byte("g ua x\ng range 10.0.0.0/8\n"))
	f.Add([]byte("g range ::/0\ng ua \xff\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		c, err := ParseCrawlers(bytes.NewReader(b), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error without a location: %v", err)
			}
			return
		}
		c.Check(string(b), netip.MustParseAddr("10.1.2.3"))
	})
}

func FuzzParseStacks(f *testing.F) {
	f.Add(tlsClientsTxt)
	f.Add([]byte("t13d3112h2_e8f1e7e78f70_b26ce05bbdd6 library curl\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		s, err := ParseStacks(bytes.NewReader(b), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error without a location: %v", err)
			}
			return
		}
		for k, v := range s.m {
			if got, ok := s.Client("t13d0000h2_" + k); !ok || got != v {
				t.Fatalf("round trip of %s: %q %v", k, got, ok)
			}
		}
	})
}

// maybeCrawlerSlow is maybeCrawler as a search per needle, the reference.
func maybeCrawlerSlow(ua string) bool {
	for _, n := range crawlerNeedles {
		if strings.Contains(ua, n) {
			return true
		}
	}
	return false
}

func TestMaybeCrawler(t *testing.T) {
	for _, ua := range []string{
		"", "b", "bo", "bot", "xbo", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		"facebookexternalhit/1.1", "Mozilla/5.0 (compatible; YandexBot/3.0)", "Slack Preview", "ccrawl", "spide",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0)", "externa", "Yande", "\xffbot",
	} {
		if got, want := maybeCrawler(ua), maybeCrawlerSlow(ua); got != want {
			t.Errorf("maybeCrawler(%q) = %v, want %v", ua, got, want)
		}
	}
}

func FuzzMaybeCrawler(f *testing.F) {
	f.Add("Mozilla/5.0 (compatible; Googlebot/2.1)")
	f.Add("curl/8.5.0")
	f.Fuzz(func(t *testing.T, ua string) {
		if got, want := maybeCrawler(ua), maybeCrawlerSlow(ua); got != want {
			t.Errorf("maybeCrawler(%q) = %v, want %v", ua, got, want)
		}
	})
}

func BenchmarkMaybeCrawler(b *testing.B) {
	for _, ua := range []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
	} {
		b.Run("onepass", func(b *testing.B) {
			for b.Loop() {
				maybeCrawler(ua)
			}
		})
		b.Run("contains", func(b *testing.B) {
			for b.Loop() {
				maybeCrawlerSlow(ua)
			}
		})
	}
}

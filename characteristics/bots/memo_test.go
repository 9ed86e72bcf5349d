package bots

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

var memoUAs = []string{
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"Mozilla/5.0 (compatible; bingbot/2.0)",
	"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"AcmeFetcher/1.0",
	"",
	"x",
	strings.Repeat("a", memoMaxUA) + "Googlebot", // too long to remember
	strings.Repeat("b", memoMaxUA-9) + "Googlebot",
}

var memoAddrs = []netip.Addr{
	netip.MustParseAddr("66.249.66.1"), netip.MustParseAddr("157.55.39.10"),
	netip.MustParseAddr("::ffff:66.249.66.1"), netip.MustParseAddr("192.0.2.7"), {},
}

// TestCheckMemo: CheckMemo answers what Check does, on a hit, a miss, a user
// agent too long to remember, slots that collide (more user agents than
// slots), and after the table changes under the memo.
func TestCheckMemo(t *testing.T) {
	acme, err := ParseCrawlers(strings.NewReader("acme ua AcmeFetcher\nacme ua Googlebot\nacme range 192.0.2.0/24\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	uas := append([]string(nil), memoUAs...)
	for i := range 3 * memoSlots {
		uas = append(uas, fmt.Sprintf("ua %d bot", i), fmt.Sprintf("ua %d", i))
	}
	var m Memo
	for round := range 2 {
		for _, c := range []*Crawlers{DefaultCrawlers(), acme, DefaultCrawlers()} {
			for _, ua := range uas {
				for _, a := range memoAddrs {
					n1, v1 := c.Check(ua, a)
					n2, v2 := c.CheckMemo(ua, a, &m)
					if n1 != n2 || v1 != v2 {
						t.Fatalf("round %d: CheckMemo(%.40q, %v) = %q %v, Check %q %v", round, ua, a, n2, v2, n1, v1)
					}
				}
			}
		}
	}
	if n, v := DefaultCrawlers().CheckMemo(memoUAs[0], memoAddrs[0], nil); n != "googlebot" || !v {
		t.Errorf("CheckMemo with no memo = %q %v", n, v)
	}
}

func TestCheckMemoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c, m := DefaultCrawlers(), new(Memo)
	a := netip.MustParseAddr("203.0.113.9")
	uas := make([]string, 2*memoSlots) // more than fit: misses too
	for i := range uas {
		uas[i] = fmt.Sprintf("Mozilla/5.0 (compatible; Googlebot/2.%d)", i)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		c.CheckMemo(uas[i%len(uas)], a, m)
		c.CheckMemo(memoUAs[3], a, m)
		i++
	}); n != 0 {
		t.Errorf("%v allocs per CheckMemo, want 0", n)
	}
}

// BenchmarkCheckMemo compares Check and CheckMemo on a browser's user agent
// seen again (hit) and on a different user agent every call (unique: what
// hostile traffic does to the memo, which must cost no more than ~1.2x
// Check).
func BenchmarkCheckMemo(b *testing.B) {
	c := DefaultCrawlers()
	a := netip.MustParseAddr("203.0.113.9")
	const browser = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
	unique := make([]string, 1<<16)
	for i := range unique {
		unique[i] = fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.%d.%d Safari/537.36", i>>8, i&255)
	}
	b.Run("hit/check", func(b *testing.B) {
		for b.Loop() {
			c.Check(browser, a)
		}
	})
	b.Run("hit/memo", func(b *testing.B) {
		m := new(Memo)
		for b.Loop() {
			c.CheckMemo(browser, a, m)
		}
	})
	b.Run("unique/check", func(b *testing.B) {
		i := 0
		for b.Loop() {
			c.Check(unique[i&(len(unique)-1)], a)
			i++
		}
	})
	b.Run("unique/memo", func(b *testing.B) {
		m := new(Memo)
		i := 0
		for b.Loop() {
			c.CheckMemo(unique[i&(len(unique)-1)], a, m)
			i++
		}
	})
}

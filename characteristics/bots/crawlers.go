package bots

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"strings"
)

//go:embed crawlers.txt
var crawlersTxt []byte

// Crawlers is a table of crawlers: the user-agent tokens each announces
// itself with and the networks it crawls from. It is immutable and safe for
// concurrent use.
type Crawlers struct {
	names  []string
	tokens []token // in file order; the first match wins
	ranges [][]netip.Prefix
	// rdns holds the domains each crawler's reverse DNS names end in;
	// partial marks the crawlers whose ranges are not all their addresses.
	rdns    [][]string
	partial []bool
	index   map[string]int
	// filtered: every token contains a word of maybeCrawler, so a user
	// agent without one names no crawler.
	filtered bool
}

type token struct {
	s       string
	crawler int
}

// maxLine bounds a line of a table file.
const maxLine = 4096

// ParseCrawlers reads a crawler table. Each line is blank, a # comment, or
// three fields:
//
//	<crawler> ua <token>       the user agent contains <token> (case-sensitive)
//	<crawler> range <prefix>   the crawler crawls from <prefix> (IPv4 or IPv6 CIDR)
//	<crawler> rdns <domain>    its addresses' reverse DNS names end in <domain>
//	                           and resolve back (forward-confirmed reverse DNS)
//	<crawler> ranges partial   it also crawls from outside its ranges: an
//	                           address outside them is only judged by reverse DNS
//
// Every crawler needs at least one ua, and a range or an rdns. file names the source
// in errors, which carry its line.
func ParseCrawlers(r io.Reader, file string) (*Crawlers, error) {
	c := &Crawlers{}
	index := map[string]int{}
	lines := map[string]int{} // first line of each crawler, for errors
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want three fields, <crawler> ua <token> or <crawler> range <prefix>; got %d", file, n, len(f))
		}
		name, kind, val := f[0], f[1], f[2]
		i, ok := index[name]
		if !ok {
			i = len(c.names)
			index[name] = i
			lines[name] = n
			c.names = append(c.names, name)
			c.ranges = append(c.ranges, nil)
			c.rdns = append(c.rdns, nil)
			c.partial = append(c.partial, false)
		}
		switch kind {
		case "ua":
			c.tokens = append(c.tokens, token{s: val, crawler: i})
		case "range":
			p, err := netip.ParsePrefix(val)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: range %q: %v", file, n, val, err)
			}
			if p.Addr().Zone() != "" {
				return nil, fmt.Errorf("%s:%d: range %q: zones are not accepted", file, n, val)
			}
			c.ranges[i] = append(c.ranges[i], unmap(p.Masked()))
		case "rdns":
			d := strings.ToLower(strings.Trim(val, "."))
			if d == "" || !strings.Contains(d, ".") {
				return nil, fmt.Errorf("%s:%d: rdns %q: want a domain such as googlebot.com", file, n, val)
			}
			c.rdns[i] = append(c.rdns[i], d)
		case "ranges":
			if val != "partial" {
				return nil, fmt.Errorf("%s:%d: ranges %q: accepted: partial", file, n, val)
			}
			c.partial[i] = true
		default:
			return nil, fmt.Errorf("%s:%d: field %q: accepted: ua, range, rdns, ranges", file, n, kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
	}
	c.filtered = !slices.ContainsFunc(c.tokens, func(t token) bool { return !maybeCrawler(t.s) })
	for i, name := range c.names {
		if len(c.ranges[i]) == 0 && len(c.rdns[i]) == 0 {
			return nil, fmt.Errorf("%s:%d: crawler %s has no range or rdns line", file, lines[name], name)
		}
		if !slices.ContainsFunc(c.tokens, func(t token) bool { return t.crawler == i }) {
			return nil, fmt.Errorf("%s:%d: crawler %s has no ua line", file, lines[name], name)
		}
	}
	c.index = index
	return c, nil
}

// RDNS returns the domains that the crawler's reverse DNS names end in
// (nil: it is known by its ranges only), and whether its ranges are
// complete: every address outside them is not the crawler's, with no lookup
// needed. It allocates nothing; the slice must not be changed.
func (c *Crawlers) RDNS(name string) (domains []string, complete bool) {
	i, ok := c.index[name]
	if !ok {
		return nil, false
	}
	return c.rdns[i], len(c.ranges[i]) > 0 && !c.partial[i]
}

func unmap(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// LoadCrawlers reads a crawler table from a file; "" means the embedded one.
func LoadCrawlers(path string) (*Crawlers, error) {
	if path == "" {
		return DefaultCrawlers(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bots: %w", err)
	}
	defer f.Close()
	return ParseCrawlers(f, path)
}

var defaultCrawlers = func() *Crawlers {
	c, err := ParseCrawlers(bytes.NewReader(crawlersTxt), "crawlers.txt")
	if err != nil {
		panic(err) // the embedded table is tested
	}
	return c
}()

// DefaultCrawlers returns the embedded table.
func DefaultCrawlers() *Crawlers { return defaultCrawlers }

// Names lists the crawlers in file order.
func (c *Crawlers) Names() []string { return slices.Clone(c.names) }

// Check returns the crawler that the user agent ua names, if any, and
// whether addr lies in that crawler's ranges. It allocates nothing.
func (c *Crawlers) Check(ua string, addr netip.Addr) (name string, verified bool) {
	return c.result(c.find(ua), addr)
}

// find returns the index of the crawler that ua names, or -1.
func (c *Crawlers) find(ua string) int {
	if c.filtered && !maybeCrawler(ua) {
		return -1
	}
	for _, t := range c.tokens {
		if strings.Contains(ua, t.s) {
			return t.crawler
		}
	}
	return -1
}

// result is Check's answer for crawler i (-1: none).
func (c *Crawlers) result(i int, addr netip.Addr) (name string, verified bool) {
	if i < 0 {
		return "", false
	}
	addr = addr.Unmap()
	for _, p := range c.ranges[i] {
		if p.Contains(addr) {
			return c.names[i], true
		}
	}
	return c.names[i], false
}

// Memo remembers which crawler the user agents seen last name, for one
// goroutine: a log has few distinct user agents, and finding the crawler
// scans the whole user agent, where a hit in the memo hashes and compares
// it. It is a direct-mapped table of memoSlots user agents up to memoMaxUA
// bytes, which holds copies of them, so it allocates nothing; a longer user
// agent, or a table other than the one it was filled from, is checked as
// Check does. When too few lookups hit (every user agent new, as hostile
// traffic can make them), it stands aside for a while, so that a miss costs
// little more than Check. The zero value is ready for use; a Memo is not
// safe for concurrent use.
type Memo struct {
	table *Crawlers // what the slots were filled from
	seed  maphash.Seed
	// lookups and hits in the current window of memoWindow lookups; skip:
	// calls left to pass straight to Check.
	lookups, hits, skip int
	slots               [memoSlots]memoSlot
}

const (
	memoSlots   = 1024 // a power of two
	memoMaxUA   = 256
	memoWindow  = 256  // lookups over which the hit rate is judged
	memoMinHits = 64   // hits in a window below which the memo stands aside
	memoSkip    = 4096 // calls it stands aside for
)

type memoSlot struct {
	n       uint16 // length of the user agent; 0: empty
	crawler int16  // index of its crawler, -1 none
	ua      [memoMaxUA]byte
}

// CheckMemo is Check remembering in m (nil: none) what it found.
func (c *Crawlers) CheckMemo(ua string, addr netip.Addr, m *Memo) (name string, verified bool) {
	if m == nil || len(ua) == 0 || len(ua) > memoMaxUA || len(c.names) > math.MaxInt16 {
		return c.Check(ua, addr)
	}
	if m.skip > 0 {
		m.skip--
		return c.Check(ua, addr)
	}
	if m.table != c {
		if m.table == nil {
			m.seed = maphash.MakeSeed()
		}
		m.table = c
		for i := range m.slots {
			m.slots[i].n = 0
		}
	}
	s := &m.slots[maphash.String(m.seed, ua)&(memoSlots-1)]
	if int(s.n) == len(ua) && string(s.ua[:s.n]) == ua {
		m.hits++
	} else {
		s.n, s.crawler = uint16(copy(s.ua[:], ua)), int16(c.find(ua))
	}
	if m.lookups++; m.lookups == memoWindow {
		if m.hits < memoMinHits {
			m.skip = memoSkip
		}
		m.lookups, m.hits = 0, 0
	}
	return c.result(int(s.crawler), addr)
}

// crawlerNeedles are the substrings of maybeCrawler: every crawler token of
// the embedded table and of the published lists contains one of them; a file
// whose tokens do not is still checked token by token, only slower. No two
// start with the same byte.
var crawlerNeedles = [...]string{"bot", "Bot", "spider", "crawl", "external", "Google", "Preview", "facebook", "Yandex"}

// crawlerFirst maps a byte to 1 + the index of the needle starting with it.
var crawlerFirst = func() (t [256]uint8) {
	for i, n := range crawlerNeedles {
		if t[n[0]] != 0 {
			panic("bots: two crawler needles start with " + n[:1])
		}
		t[n[0]] = uint8(i + 1)
	}
	return t
}()

// maybeCrawler is a cheap filter, run on every event: whether ua contains
// one of crawlerNeedles. Most user agents are browsers' and contain none of
// them; one pass over ua costs less than a search per needle.
func maybeCrawler(ua string) bool {
	for i := 0; i < len(ua); i++ {
		if k := crawlerFirst[ua[i]]; k != 0 && strings.HasPrefix(ua[i:], crawlerNeedles[k-1]) {
			return true
		}
	}
	return false
}

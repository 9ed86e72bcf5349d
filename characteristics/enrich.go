package characteristics

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/guardd/guardd/characteristics/bots"
	"github.com/guardd/guardd/characteristics/fcrdns"
)

// EnrichConfig configures an Enricher. The zero value aggregates clients into
// /24 and /64 prefixes, trusts no proxy and looks up no ASN or country.
type EnrichConfig struct {
	// PrefixV4 and PrefixV6 are the lengths of ip.src.prefix; 0 means 24 and 64.
	PrefixV4, PrefixV6 int
	// TrustedProxies lists the networks whose X-Forwarded-For is believed.
	// A request from elsewhere keeps its connection address, whatever it claims.
	TrustedProxies []netip.Prefix
	// ASNDatabase and CountryDatabase are MaxMind-format (.mmdb) files, for
	// example GeoLite2-ASN and GeoLite2-Country. They may name the same file.
	ASNDatabase, CountryDatabase string
	// CrawlerRanges is a crawler table file (format of
	// characteristics/bots.ParseCrawlers) replacing the embedded one, which
	// bot.name and bot.verified are judged against.
	CrawlerRanges string
	// TLSClients is a TLS client table file (bots.ParseStacks) replacing
	// the embedded one, which tls.client is read from.
	TLSClients string
	// Resolver is a DNS server (host:port) that verifies crawlers by
	// forward-confirmed reverse DNS (characteristics/fcrdns) when their
	// address is outside their published ranges. Without one, a crawler
	// known only by reverse DNS there is bot.pending, never judged fake.
	Resolver string
	// Verify tunes the verifier's cache and rate; its Resolver is ignored.
	Verify fcrdns.Config
}

// Enricher completes events: trusted-proxy handling, address normalisation,
// client prefix, ASN and country. It is safe for concurrent use.
type Enricher struct {
	v4, v6   int
	proxies  []netip.Prefix
	asn      *geoDB
	country  *geoDB
	crawlers *bots.Crawlers
	stacks   *bots.Stacks
	verifier *fcrdns.Verifier // nil without a resolver
}

// NewEnricher validates cfg and opens its databases.
func NewEnricher(cfg EnrichConfig) (*Enricher, error) {
	en := &Enricher{v4: cfg.PrefixV4, v6: cfg.PrefixV6, proxies: cfg.TrustedProxies}
	if en.v4 == 0 {
		en.v4 = 24
	}
	if en.v6 == 0 {
		en.v6 = 64
	}
	if en.v4 < 1 || en.v4 > 32 {
		return nil, fmt.Errorf("characteristics: prefix_v4 %d: want 1 to 32", cfg.PrefixV4)
	}
	if en.v6 < 1 || en.v6 > 128 {
		return nil, fmt.Errorf("characteristics: prefix_v6 %d: want 1 to 128", cfg.PrefixV6)
	}
	for i, p := range en.proxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("characteristics: trusted_proxies[%d]: invalid prefix", i)
		}
		en.proxies[i] = unmapPrefix(p.Masked())
	}
	var err error
	if en.crawlers, err = bots.LoadCrawlers(cfg.CrawlerRanges); err != nil {
		return nil, fmt.Errorf("characteristics: crawler_ranges: %w", err)
	}
	if en.stacks, err = bots.LoadStacks(cfg.TLSClients); err != nil {
		return nil, fmt.Errorf("characteristics: tls_clients: %w", err)
	}
	if cfg.Resolver != "" {
		vc := cfg.Verify
		vc.Resolver = cfg.Resolver
		if en.verifier, err = fcrdns.New(vc); err != nil {
			return nil, fmt.Errorf("characteristics: resolver: %w", err)
		}
	}
	if cfg.ASNDatabase != "" {
		if en.asn, err = openGeoDB(cfg.ASNDatabase); err != nil {
			return nil, err
		}
	}
	if cfg.CountryDatabase != "" {
		if cfg.CountryDatabase == cfg.ASNDatabase {
			en.country = en.asn
		} else if en.country, err = openGeoDB(cfg.CountryDatabase); err != nil {
			en.Close()
			return nil, err
		}
	}
	return en, nil
}

// Close releases the databases.
func (en *Enricher) Close() error {
	var errs []error
	if en.asn != nil {
		errs = append(errs, en.asn.r.Close())
	}
	if en.country != nil && en.country != en.asn {
		errs = append(errs, en.country.r.Close())
	}
	en.asn, en.country = nil, nil
	if en.verifier != nil {
		errs = append(errs, en.verifier.Close())
	}
	return errors.Join(errs...)
}

// Enrich completes e in place. It allocates nothing once the database caches
// are warm.
func (en *Enricher) Enrich(e *Event) { en.EnrichMemo(e, nil) }

// EnrichMemo is Enrich remembering in m (nil: nothing), which belongs to the
// calling goroutine, what it worked out from user agents, for the events
// that follow: one per worker of a log pipeline.
func (en *Enricher) EnrichMemo(e *Event, m *bots.Memo) {
	e.IP = e.IP.Unmap()
	e.stacks = en.stacks
	if en.trusted(e.IP) {
		if xff, ok := e.Header("x-forwarded-for"); ok {
			e.IP = en.clientFromXFF(xff, e.IP)
		}
	}
	if !e.IP.IsValid() {
		return
	}
	bits := en.v6
	if e.IP.Is4() {
		bits = en.v4
	}
	e.Prefix, _ = e.IP.Prefix(bits)
	e.Bot.Name, e.Bot.Verified = en.crawlers.CheckMemo(e.UserAgent, e.IP, m)
	if e.Bot.Name != "" && !e.Bot.Verified {
		en.verifyBot(e)
	}
	if en.asn != nil && e.ASN == 0 {
		e.ASN = en.asn.lookup(e.IP).asn
	}
	if en.country != nil && e.Country == "" {
		e.Country = en.country.lookup(e.IP).country
	}
}

// verifyBot judges a crawler's name from outside its ranges by reverse
// DNS: verified, failed (left unverified: fake), or pending while the
// lookup has not answered. Without a resolver, a crawler whose ranges are
// not all its addresses cannot be checked, and is pending.
func (en *Enricher) verifyBot(e *Event) {
	domains, complete := en.crawlers.RDNS(e.Bot.Name)
	if len(domains) == 0 {
		return // known by its ranges only: outside them, not the crawler
	}
	if en.verifier == nil {
		e.Bot.Pending = !complete
		return
	}
	now := e.Time
	if now.IsZero() {
		now = time.Now()
	}
	switch en.verifier.Check(e.IP, domains, now) {
	case fcrdns.Verified:
		e.Bot.Verified = true
	case fcrdns.Pending:
		e.Bot.Pending = true
	}
}

func (en *Enricher) trusted(a netip.Addr) bool {
	for _, p := range en.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientFromXFF walks X-Forwarded-For from the right, skipping trusted
// proxies, and returns the first address that is not one; that is the client
// as far as anyone we trust can tell. An unparsable entry stops the walk at the
// last address we could verify.
func (en *Enricher) clientFromXFF(xff string, peer netip.Addr) netip.Addr {
	client := peer
	for xff != "" {
		var part string
		if i := strings.LastIndexByte(xff, ','); i >= 0 {
			part, xff = xff[i+1:], xff[:i]
		} else {
			part, xff = xff, ""
		}
		a, err := netip.ParseAddr(strings.TrimSpace(part))
		if err != nil {
			return client
		}
		client = a.Unmap()
		if !en.trusted(client) {
			return client
		}
	}
	return client
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// geoDB is a MaxMind reader with a cache of decoded records by data offset:
// many networks share one record, so the cache stays small (one entry per
// country; one per AS for ASN databases) and lookups stop allocating.
type geoDB struct {
	r     *maxminddb.Reader
	path  string
	mu    sync.RWMutex
	cache map[uintptr]geoRecord
}

type geoRecord struct {
	asn     uint32
	country string
}

// geoCacheMax bounds the decoded-record cache; past it records are decoded on
// every lookup.
const geoCacheMax = 1 << 17

func openGeoDB(path string) (*geoDB, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("characteristics: open %s: %w", path, err)
	}
	return &geoDB{r: r, path: path, cache: make(map[uintptr]geoRecord)}, nil
}

func (g *geoDB) lookup(a netip.Addr) geoRecord {
	res := g.r.Lookup(a)
	if !res.Found() {
		return geoRecord{}
	}
	off := res.Offset()
	g.mu.RLock()
	rec, ok := g.cache[off]
	g.mu.RUnlock()
	if ok {
		return rec
	}
	var raw struct {
		ASN     uint32 `maxminddb:"autonomous_system_number"`
		Country struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
	}
	if err := res.Decode(&raw); err != nil {
		return geoRecord{}
	}
	rec = geoRecord{asn: raw.ASN, country: raw.Country.ISOCode}
	g.mu.Lock()
	if len(g.cache) < geoCacheMax {
		g.cache[off] = rec
	}
	g.mu.Unlock()
	return rec
}

package loggen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/guardd/guardd/characteristics/mmdbtest"
)

// Formats the generator writes.
const (
	// FormatCombined is nginx's combined format.
	FormatCombined = "combined"
	// FormatGuardd is combined plus the fields guardd's docs recommend, with
	// $ssl_ja4 standing for a JA4 from a TLS fingerprinting module.
	FormatGuardd = "guardd"
)

// GuarddLogFormat is the nginx log_format directive of FormatGuardd.
const GuarddLogFormat = `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $remote_port $request_time "$host" "$cookie_session" "$ssl_ja4"';`

// Config configures Generate. Zero fields take the defaults given.
type Config struct {
	Seed     uint64
	Start    time.Time     // default 2026-11-01T10:00:00Z
	Duration time.Duration // default 1h
	Benign   int           // benign clients, default 3000
	Format   string        // FormatCombined or FormatGuardd (default)
	NoAttack bool          // benign traffic only (for throughput benchmarks)
}

// Attack is one campaign and what must catch it.
type Attack struct {
	Name   string   // what the campaign does
	Rule   string   // the built-in rule expected to trip
	Scope  string   // the characteristic of the expected mitigations' scope
	Values []string // every value of Scope that must be mitigated
	IPs    []string // the campaign's client addresses
}

// Labels are the ground truth of a generated log.
type Labels struct {
	Attacks       []Attack
	BenignIPs     map[string]bool
	BenignPrefix  map[string]bool // /24 and /64 prefixes with only benign clients
	BenignJA4     map[string]bool
	BenignCookies map[string]bool
	BenignASNs    map[string]bool
	Lines         int
	Networks      []mmdbtest.Network // what GeoDB writes: ASN and country of every client network
	// Classes lists every class of actor, attackers and benign, with how
	// many client addresses each has; Actors gives the class of every
	// client address.
	Classes []Class
	Actors  map[string]string
}

// GeoDB writes a MaxMind-format database covering the generated clients.
func (l *Labels) GeoDB(path string) error { return mmdbtest.Write(path, l.Networks) }

type request struct {
	t       time.Time
	ip      netip.Addr
	port    uint16
	method  string
	path    string
	status  int
	bytes   int
	ref     string
	ua      string
	cookie  string
	ja4     string
	reqTime float64
	proto   string // "" is HTTP/1.1
}

var browserUAs = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
}

// Browser JA4s, one per UA above (Chrome's is JA4.md's example).
var browserJA4s = []string{
	"t13d1516h2_8daaf6152771_e5627efa2ab1",
	"t13d2014h2_a09f3c656075_14788d8d241b",
	"t13d1715h2_5b57614c22b0_3d5424432f57",
	"t13d2014h2_a09f3c656075_14788d8d241b",
	"t13d1516h2_8daaf6152771_e5627efa2ab1",
}

var (
	pages = []string{"/", "/products", "/about", "/cart", "/search?q=shoes", "/blog", "/blog/post-1", "/account", "/contact", "/faq",
		"/search?q=select+dining+chairs", "/search?q=union+station+hotels", "/search?q=drop+table+legs"}
	statics = []string{"/static/app.js", "/static/vendor.js", "/static/app.css", "/static/logo.png", "/static/fonts/inter.woff2", "/favicon.ico", "/static/hero.jpg", "/static/icons.svg"}
	apis    = []string{"/api/cart", "/api/user", "/api/recommendations", "/api/products?page=1", "/api/products?page=2", "/api/stock", "/api/events"}
)

// SensitivePaths are what probing campaigns ask for.
var SensitivePaths = []string{
	"/.env", "/.git/config", "/.git/HEAD", "/wp-admin/", "/wp-login.php", "/phpmyadmin/", "/pma/",
	"/.aws/credentials", "/config.php.bak", "/server-status", "/.DS_Store", "/backup.sql", "/admin/config.php",
	"/.svn/entries", "/wp-config.php.old", "/.htpasswd", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php",
}

type gen struct {
	cfg    Config
	rng    *rand.Rand
	reqs   []request
	labels Labels
	ispV4  []netip.Prefix
	ispV6  []netip.Prefix
}

// Generate writes a log to w and returns its labels.
func Generate(w io.Writer, cfg Config) (*Labels, error) {
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	}
	if cfg.Duration == 0 {
		cfg.Duration = time.Hour
	}
	if cfg.Benign == 0 {
		cfg.Benign = 3000
	}
	if cfg.Format == "" {
		cfg.Format = FormatGuardd
	}
	if cfg.Format != FormatCombined && cfg.Format != FormatGuardd {
		return nil, fmt.Errorf("loggen: format %q: want %q or %q", cfg.Format, FormatCombined, FormatGuardd)
	}
	g := &gen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))}
	g.labels = Labels{BenignIPs: map[string]bool{}, BenignPrefix: map[string]bool{}, BenignJA4: map[string]bool{},
		BenignCookies: map[string]bool{}, BenignASNs: map[string]bool{}, Actors: map[string]string{}}
	g.networks()
	for i := range cfg.Benign {
		g.benign(i)
	}
	g.benignClasses()
	if !cfg.NoAttack {
		g.attacks()
		g.behaviourAttacks()
	}
	g.countClasses()
	slices.SortStableFunc(g.reqs, func(a, b request) int { return a.t.Compare(b.t) })
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for i := range g.reqs {
		buf = g.appendLine(buf[:0], &g.reqs[i])
		if _, err := bw.Write(buf); err != nil {
			return nil, fmt.Errorf("loggen: %w", err)
		}
	}
	g.labels.Lines = len(g.reqs)
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("loggen: %w", err)
	}
	return &g.labels, nil
}

// The generator's IPv6 clients all lie in the documentation range
// 2001:db8::/32: residential ISP i (0..19) is 2001:db8:ii00::/40, the
// attackers' hosting provider 2001:db8:ffff::/48, outside every ISP.
const ispV6Count = 20

// ispV6Net is the network of IPv6 residential ISP i.
func ispV6Net(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i)}), 40)
}

// ispV6Addr is a fixed address of a benign client of IPv6 ISP i: subnet
// (24 bits) picks its /64 inside the ISP's /40, host the interface.
func ispV6Addr(i int, subnet uint32, host uint64) netip.Addr {
	b := ispV6Net(i).Addr().As16()
	b[5], b[6], b[7] = byte(subnet>>16), byte(subnet>>8), byte(subnet)
	for k := range 8 {
		b[15-k] = byte(host >> (8 * k))
	}
	return netip.AddrFrom16(b)
}

// attackV6 is the attackers' IPv6 hosting network ("VPS Cloud v6"); vpsV6
// is its address ending in host.
var attackV6 = netip.MustParsePrefix("2001:db8:ffff::/48")

func vpsV6(host uint16) netip.Addr {
	b := attackV6.Addr().As16()
	b[14], b[15] = byte(host>>8), byte(host)
	return netip.AddrFrom16(b)
}

// networks lays out 40 residential IPv4 /16s and 20 IPv6 /40s, one ASN
// each, and the attackers' hosting networks, all disjoint.
func (g *gen) networks() {
	countries := []string{"US", "DE", "FR", "NL", "GB", "JP", "BR", "IN"}
	for i := range 40 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(60 + i), byte(10 + i), 0, 0}), 16)
		g.ispV4 = append(g.ispV4, p)
		asn := uint32(64600 + i)
		g.labels.Networks = append(g.labels.Networks, mmdbtest.Network{Prefix: p, ASN: asn, Org: "ISP " + strconv.Itoa(i), Country: countries[i%len(countries)]})
		g.labels.BenignASNs[strconv.Itoa(int(asn))] = true
	}
	for i := range ispV6Count {
		p := ispV6Net(i)
		g.ispV6 = append(g.ispV6, p)
		asn := uint32(64700 + i)
		g.labels.Networks = append(g.labels.Networks, mmdbtest.Network{Prefix: p, ASN: asn, Org: "ISP6 " + strconv.Itoa(i), Country: countries[i%len(countries)]})
		g.labels.BenignASNs[strconv.Itoa(int(asn))] = true
	}
	// Attackers' networks: a hosting provider (scrapers) and a botnet-ish range.
	g.labels.Networks = append(g.labels.Networks,
		mmdbtest.Network{Prefix: netip.MustParsePrefix("198.18.0.0/16"), ASN: 64666, Org: "Bulk Hosting", Country: "US"},
		mmdbtest.Network{Prefix: netip.MustParsePrefix("203.0.113.0/24"), ASN: 64667, Org: "VPS Cloud", Country: "NL"},
		mmdbtest.Network{Prefix: attackV6, ASN: 64668, Org: "VPS Cloud v6", Country: "NL"},
	)
	g.labels.Networks = append(g.labels.Networks, relayNetworks()...)
}

func (g *gen) benignAddr() netip.Addr {
	if g.rng.IntN(10) < 3 {
		// Random below the ISP's /40: bytes 5..15.
		p := g.ispV6[g.rng.IntN(len(g.ispV6))]
		b := p.Addr().As16()
		for i := p.Bits() / 8; i < 16; i++ {
			b[i] = byte(g.rng.UintN(256))
		}
		return netip.AddrFrom16(b)
	}
	p := g.ispV4[g.rng.IntN(len(g.ispV4))]
	b := p.Addr().As4()
	b[2], b[3] = byte(g.rng.UintN(256)), byte(1+g.rng.UintN(254))
	return netip.AddrFrom4(b)
}

func (g *gen) at(offset time.Duration) time.Time { return g.cfg.Start.Add(offset) }

func (g *gen) add(r request) {
	if r.port == 0 {
		r.port = uint16(32768 + g.rng.UintN(28000))
	}
	if r.reqTime == 0 {
		r.reqTime = float64(1+g.rng.IntN(120)) / 1000
	}
	if r.bytes == 0 && r.status < 300 {
		r.bytes = 200 + g.rng.IntN(40000)
	}
	g.reqs = append(g.reqs, r)
}

// benign is one person browsing from a residential address of their own.
func (g *gen) benign(i int) {
	ip := g.benignAddr()
	for g.labels.BenignIPs[ip.String()] {
		ip = g.benignAddr()
	}
	b := g.rng.IntN(len(browserUAs))
	g.benignActor(ip, ClassBrowsing)
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	g.browse(ip, browserUAs[b], browserJA4s[b], time.Duration(g.rng.Int64N(int64(span))), 2+g.rng.IntN(18))
}

// browse is one person's visit: a few page views, each pulling static
// assets and API calls like a single-page app, at human speed; sometimes a
// login (rarely mistyped), a search, a stray 404 or a broken image. The
// site sets a session cookie on the first answer.
func (g *gen) browse(ip netip.Addr, ua, ja4 string, t time.Duration, views int) {
	g.labels.BenignJA4[ja4] = true
	cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
	g.labels.BenignCookies[cookie] = true
	ref := "-"
	for v := range views {
		page := pages[g.rng.IntN(len(pages))]
		if g.rng.IntN(3) == 0 {
			page = "/product/" + strconv.Itoa(g.rng.IntN(5000))
		}
		base := request{ip: ip, ua: ua, ja4: ja4, cookie: cookie}
		r := base
		if v == 0 {
			r.cookie = ""
		}
		r.t, r.method, r.path, r.status, r.ref = g.at(t), "GET", page, 200, ref
		g.add(r)
		for range 2 + g.rng.IntN(5) {
			s := base
			s.t, s.method, s.path, s.status, s.ref = g.at(t+time.Duration(g.rng.IntN(900))*time.Millisecond), "GET", statics[g.rng.IntN(len(statics))], 200, "https://shop.example"+page
			if g.rng.IntN(4) == 0 {
				s.status, s.bytes = 304, 0
			}
			g.add(s)
		}
		if g.rng.IntN(10) == 0 { // a page with a broken image
			s := base
			s.t, s.method, s.path, s.status, s.ref = g.at(t+time.Duration(g.rng.IntN(900))*time.Millisecond), "GET", "/static/img/banner-old.png", 404, "https://shop.example"+page
			g.add(s)
		}
		for range g.rng.IntN(12) {
			a := base
			a.t, a.method, a.path, a.status, a.ref = g.at(t+time.Duration(g.rng.IntN(5000))*time.Millisecond), "GET", apis[g.rng.IntN(len(apis))], 200, "https://shop.example"+page
			if g.rng.IntN(5) == 0 {
				a.method = "POST"
			}
			g.add(a)
		}
		if v == 1 && g.rng.IntN(4) == 0 { // a login, mistyped once in a while
			l := base
			l.t, l.method, l.path, l.status, l.ref = g.at(t+2*time.Second), "POST", "/login", 302, "https://shop.example/login"
			if g.rng.IntN(8) == 0 {
				l.status = 401
				g.add(l)
				l.t = l.t.Add(6 * time.Second)
				l.status = 302
			}
			g.add(l)
		}
		if g.rng.IntN(12) == 0 {
			n := base
			n.t, n.method, n.path, n.status = g.at(t+time.Second), "GET", "/old-page-"+strconv.Itoa(g.rng.IntN(50)), 404
			g.add(n)
		}
		ref = "https://shop.example" + page
		t += time.Duration(5+g.rng.IntN(90)) * time.Second
	}
}

func (g *gen) attack(a Attack) {
	g.labels.Attacks = append(g.labels.Attacks, a)
	for _, ip := range a.IPs {
		g.actor(ip, a.Name, true)
	}
}

func addrV4(a, b, c, d int) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a), byte(b), byte(c), byte(d)})
}

func (g *gen) attacks() {
	begin := 5 * time.Minute
	bot := "python-requests/2.32.3"
	botJA4 := "t13d190900_9dc949149365_97f8aa674fd9"

	// Login brute force: one address each, two attempts a second... well, one
	// every two seconds, for four minutes.
	var bf []string
	for _, ip := range []netip.Addr{addrV4(203, 0, 113, 10), vpsV6(0x10)} {
		bf = append(bf, ip.String())
		for k := range 120 {
			g.add(request{t: g.at(begin + time.Duration(k)*2*time.Second), ip: ip, method: "POST", path: "/login", status: 401, ua: bot, ja4: botJA4, bytes: 50})
		}
	}
	g.attack(Attack{Name: "login brute force", Rule: "login_bruteforce", Scope: "ip.src", Values: bf, IPs: bf})

	// Credential stuffing from 300 rotating addresses sharing one TLS stack.
	stuffJA4 := "t13d311100_e8f1e7e78f70_d41ae481755e"
	var stuffIPs []string
	for k := range 300 {
		ip := addrV4(198, 18, 100+k/250, 1+k%250)
		stuffIPs = append(stuffIPs, ip.String())
		for j := range 2 {
			g.add(request{t: g.at(begin + time.Duration(k*2+j*300)*time.Second/2), ip: ip, method: "POST", path: "/login", status: 401,
				ua: browserUAs[0], ja4: stuffJA4, bytes: 50})
		}
	}
	g.attack(Attack{Name: "credential stuffing (one TLS stack, many IPs)", Rule: "credential_stuffing_ja4", Scope: "tls.ja4", Values: []string{stuffJA4}, IPs: stuffIPs})

	// Credential stuffing replaying one session cookie through 100 proxies.
	stuffCookie := "stolen-7f3a9c"
	var cookieIPs []string
	for k := range 100 {
		ip := addrV4(198, 18, 50, 1+k)
		cookieIPs = append(cookieIPs, ip.String())
		for j := range 2 {
			g.add(request{t: g.at(20*time.Minute + time.Duration(k*3+j*200)*time.Second/2), ip: ip, method: "POST", path: "/login", status: 401,
				ua: browserUAs[2], ja4: "t13d1812h1_85036bcba153_b26ce05bbdd6", cookie: stuffCookie, bytes: 50})
		}
	}
	g.attack(Attack{Name: "credential stuffing (one cookie, many IPs)", Rule: "credential_stuffing_cookie", Scope: `http.cookies["session"]`, Values: []string{stuffCookie}, IPs: cookieIPs})

	// Sensitive-file and admin-panel probing.
	var probe []string
	for n, ip := range []netip.Addr{addrV4(203, 0, 113, 20), addrV4(203, 0, 113, 21), vpsV6(0x20)} {
		probe = append(probe, ip.String())
		for k, p := range SensitivePaths {
			g.add(request{t: g.at(10*time.Minute + time.Duration(n)*time.Minute + time.Duration(k)*time.Second), ip: ip, method: "GET", path: p, status: 404,
				ua: browserUAs[0], ja4: botJA4})
		}
	}
	g.attack(Attack{Name: "sensitive-file probing", Rule: "sensitive_probe", Scope: "ip.src", Values: probe, IPs: probe})

	// 404 scanning: many made-up paths, fast.
	var scan []string
	for n, ip := range []netip.Addr{addrV4(203, 0, 113, 30), vpsV6(0x30)} {
		scan = append(scan, ip.String())
		for k := range 300 {
			g.add(request{t: g.at(15*time.Minute + time.Duration(n)*time.Minute + time.Duration(k)*300*time.Millisecond), ip: ip, method: "GET",
				path: fmt.Sprintf("/%x", g.rng.Uint32()), status: 404, ua: browserUAs[1], ja4: botJA4})
		}
	}
	g.attack(Attack{Name: "404 scanning", Rule: "scan_404", Scope: "ip.src", Values: scan, IPs: scan})

	// Attack tools announcing themselves.
	var tools []string
	for n, ua := range []string{"sqlmap/1.8.4#stable (https://sqlmap.org)", "Mozilla/5.00 (Nikto/2.5.0) (Evasions:None) (Test:000003)"} {
		ip := addrV4(203, 0, 113, 40+n)
		tools = append(tools, ip.String())
		for k := range 12 {
			g.add(request{t: g.at(25*time.Minute + time.Duration(k)*5*time.Second), ip: ip, method: "GET", path: "/products?id=" + strconv.Itoa(k) + "'", status: 200, ua: ua, ja4: botJA4})
		}
	}
	g.attack(Attack{Name: "scanner user agents", Rule: "scanner_ua", Scope: "ip.src", Values: tools, IPs: tools})

	// Aggressive crawling of product pages with a browser's user agent.
	var crawl []string
	for n, ip := range []netip.Addr{addrV4(203, 0, 113, 50), vpsV6(0x50)} {
		crawl = append(crawl, ip.String())
		for k := range 900 {
			g.add(request{t: g.at(8*time.Minute + time.Duration(n)*time.Minute + time.Duration(k)*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(k), status: 200, ua: browserUAs[0], ja4: botJA4})
		}
	}
	g.attack(Attack{Name: "aggressive crawling", Rule: "aggressive_crawl", Scope: "ip.src", Values: crawl, IPs: crawl})

	// Scraping spread over 200 addresses of one hosting ASN, each slow enough
	// (one page every 12 s) to pass per-IP limits; together ~5,000 pages per
	// 5 minutes.
	var scrape []string
	for k := range 200 {
		ip := addrV4(198, 18, 7+k/250, 1+k%250)
		scrape = append(scrape, ip.String())
		for j := range 150 {
			g.add(request{t: g.at(12*time.Minute + time.Duration(k)*time.Second/10 + time.Duration(j)*12*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(k*1000+j), status: 200, ua: browserUAs[3], ja4: browserJA4s[3]})
		}
	}
	g.attack(Attack{Name: "per-ASN scraping", Rule: "asn_scraping", Scope: "ip.src.asnum", Values: []string{"64666"}, IPs: scrape})
}

// appendLine formats r in the configured format.
func (g *gen) appendLine(b []byte, r *request) []byte {
	b = r.ip.AppendTo(b)
	b = append(b, " - - ["...)
	b = r.t.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, `] "`...)
	b = append(b, r.method...)
	b = append(b, ' ')
	b = append(b, r.path...)
	b = append(b, ' ')
	if r.proto == "" {
		b = append(b, "HTTP/1.1"...)
	} else {
		b = append(b, r.proto...)
	}
	b = append(b, `" `...)
	b = strconv.AppendInt(b, int64(r.status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(r.bytes), 10)
	b = append(b, ` "`...)
	b = append(b, r.ref...)
	b = append(b, `" "`...)
	b = append(b, r.ua...)
	b = append(b, '"')
	if g.cfg.Format == FormatGuardd {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(r.port), 10)
		b = append(b, ' ')
		b = strconv.AppendFloat(b, r.reqTime, 'f', 3, 64)
		b = append(b, ` "shop.example" "`...)
		b = appendDash(b, r.cookie)
		b = append(b, `" "`...)
		b = appendDash(b, r.ja4)
		b = append(b, '"')
	}
	return append(b, '\n')
}

func appendDash(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	return append(b, s...)
}

package loggen

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// Class is one kind of actor in a generated log.
type Class struct {
	Name     string
	Attacker bool
	Actors   int // client addresses
}

// Benign classes besides the people browsing from addresses of their own.
const (
	ClassBrowsing    = "browsing"
	ClassCGNAT       = "mobile carrier CGNAT"
	ClassOfficeNAT   = "office NAT"
	ClassCrawler     = "verified crawlers"
	ClassUptime      = "uptime monitors"
	ClassSPA         = "single-page app power users"
	ClassACME        = "ACME HTTP-01 validation"
	ClassWebhook     = "payment webhooks"
	ClassSQLDownload = "served .sql downloads"
)

// Attacker classes besides the campaigns of attacks().
const (
	ClassLowSlowLogin  = "low-and-slow password guessing"
	ClassPrefixScrape  = "scraping spread over a /24"
	ClassResidential   = "rotating residential proxies (library TLS, browser UA)"
	ClassHeadless      = "headless Chromium scraping"
	ClassFakeCrawler   = "fake Googlebot"
	ClassSlowScanner   = "slow 404 scanner"
	ClassFirefoxOnWire = "Firefox UA over Chromium's TLS stack"
	ClassUARotation    = "one address cycling through user agents"
	ClassCacheBusting  = "cache-busting flood"
	ClassRegular       = "machine-regular scraper (sleep loop)"
)

// actor records the class of a client address.
func (g *gen) actor(ip, class string, attacker bool) {
	if _, ok := g.labels.Actors[ip]; ok {
		return // first class wins: an address is one actor
	}
	g.labels.Actors[ip] = class
	if !slices.ContainsFunc(g.labels.Classes, func(c Class) bool { return c.Name == class }) {
		g.labels.Classes = append(g.labels.Classes, Class{Name: class, Attacker: attacker})
	}
}

// benignActor records a benign client, its address and its prefix.
func (g *gen) benignActor(ip netip.Addr, class string) {
	g.actor(ip.String(), class, false)
	g.labels.BenignIPs[ip.String()] = true
	bits := 24
	if ip.Is6() {
		bits = 64
	}
	pfx, _ := ip.Prefix(bits)
	g.labels.BenignPrefix[pfx.String()] = true
}

func (g *gen) countClasses() {
	n := map[string]int{}
	for _, c := range g.labels.Actors {
		n[c]++
	}
	for i := range g.labels.Classes {
		g.labels.Classes[i].Actors = n[g.labels.Classes[i].Name]
	}
}

// scaled returns n scaled by the number of benign clients against the
// default 3000, at least min.
func (g *gen) scaled(n, min int) int { return max(n*g.cfg.Benign/3000, min) }

var mobileUAs = []string{
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Linux; Android 14; SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1",
}

var mobileJA4s = []string{browserJA4s[3], browserJA4s[4], browserJA4s[4], browserJA4s[3]}

// benignClasses adds the traffic that naive rules mistake for attacks.
func (g *gen) benignClasses() {
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	// A carrier-grade NAT: a few public addresses, each carrying many
	// phones at once, with a handful of user agents between them.
	for a := range 4 {
		ip := addrV4(61, 11, 200, 10+a)
		g.benignActor(ip, ClassCGNAT)
		for range g.scaled(60, 20) {
			u := g.rng.IntN(len(mobileUAs))
			g.browse(ip, mobileUAs[u], mobileJA4s[u], time.Duration(g.rng.Int64N(int64(span))), 2+g.rng.IntN(12))
		}
	}
	// An office behind one address, and its IPv6 /64 (one address too).
	for _, ip := range []netip.Addr{addrV4(62, 12, 5, 7), ispV6Addr(2, 0x105, 7)} {
		g.benignActor(ip, ClassOfficeNAT)
		for range g.scaled(40, 12) {
			b := g.rng.IntN(3)
			g.browse(ip, browserUAs[b], browserJA4s[b], time.Duration(g.rng.Int64N(int64(span))), 5+g.rng.IntN(20))
		}
	}
	// Search engines from their published ranges, crawling hard, old links
	// (404s) included.
	for n, c := range []struct {
		ip netip.Addr
		ua string
	}{
		{addrV4(66, 249, 66, 1), "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
		{netip.MustParseAddr("2001:4860:4801:10::3"), "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
		{addrV4(157, 55, 39, 20), "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"},
		{addrV4(17, 241, 75, 9), "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"},
	} {
		g.benignActor(c.ip, ClassCrawler)
		for k := range int(g.cfg.Duration / time.Second) {
			r := request{t: g.at(time.Duration(k)*time.Second + time.Duration(n)*100*time.Millisecond), ip: c.ip, method: "GET", path: "/product/" + strconv.Itoa(k+n*10000), status: 200, ua: c.ua}
			if k%25 == 0 {
				r.path, r.status = "/discontinued/item-"+strconv.Itoa(k), 404
			}
			g.add(r)
		}
	}
	// Uptime monitors and health checks.
	for n, ip := range []netip.Addr{addrV4(63, 13, 1, 5), addrV4(63, 13, 1, 6), ispV6Addr(3, 0x2, 5)} {
		g.benignActor(ip, ClassUptime)
		paths := []string{"/", "/health", "/api/status"}
		for k := range int(g.cfg.Duration / (30 * time.Second)) {
			g.add(request{t: g.at(time.Duration(k)*30*time.Second + time.Duration(n)*time.Second), ip: ip, method: "GET", path: paths[n], status: 200, ua: "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)"})
		}
	}
	// Single-page app power users: hundreds of API calls a minute.
	for range g.scaled(20, 5) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassSPA)
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		start := time.Duration(g.rng.Int64N(int64(span)))
		g.add(request{t: g.at(start), ip: ip, method: "GET", path: "/app", status: 200, ua: browserUAs[0], ja4: browserJA4s[0]})
		for k := range 3000 { // 300 a minute for ten minutes
			g.add(request{t: g.at(start + time.Second + time.Duration(k)*200*time.Millisecond), ip: ip, method: "GET",
				path: apis[g.rng.IntN(len(apis))], status: 200, ua: browserUAs[0], ja4: browserJA4s[0], cookie: cookie, ref: "https://shop.example/app"})
		}
	}
	// Let's Encrypt validating HTTP-01 challenges from several vantage points.
	for n := range 4 {
		ip := addrV4(64, 14, 2, 10+n)
		g.benignActor(ip, ClassACME)
		for k := range 3 {
			g.add(request{t: g.at(time.Duration(20+k)*time.Minute + time.Duration(n)*time.Second), ip: ip, method: "GET",
				path: "/.well-known/acme-challenge/" + fmt.Sprintf("%x", g.rng.Uint64()), status: 200, ua: "Mozilla/5.0 (compatible; Let's Encrypt validation server; +https://www.letsencrypt.org)"})
		}
	}
	// A payment provider's webhooks.
	for n := range 3 {
		ip := addrV4(65, 15, 3, 20+n)
		g.benignActor(ip, ClassWebhook)
		for k := range int(g.cfg.Duration / (20 * time.Second)) {
			g.add(request{t: g.at(time.Duration(k)*20*time.Second + time.Duration(n)*7*time.Second), ip: ip, method: "POST",
				path: "/webhooks/stripe", status: 200, ua: "Stripe/1.0 (+https://stripe.com/docs/webhooks)"})
		}
	}
	// An application that really serves .sql files (migrations, dumps).
	for range g.scaled(10, 3) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassSQLDownload)
		start := time.Duration(g.rng.Int64N(int64(span)))
		for k := range 4 {
			g.add(request{t: g.at(start + time.Duration(k)*300*time.Millisecond), ip: ip, method: "GET",
				path: "/data/migrations/" + strconv.Itoa(k+1) + ".sql", status: 200, ua: browserUAs[1], ja4: browserJA4s[1], ref: "https://shop.example/app"})
		}
	}
	g.payloadLookalikes() // classes_payload.go
	g.campaignBenign()
	g.sessionBenign()     // classes_session.go
	g.fingerprintBenign() // classes_fingerprint.go
}

// Library and headless fingerprints, as characteristics/bots' table has
// them (captured with the clients themselves).
const (
	ja4PythonRequests = "t13d1812h1_85036bcba153_b26ce05bbdd6"
	ja4GoHTTP         = "t13d1312h2_f57a46bbacb6_ab7e3b40a677"
	ja4Chromium       = "t13d1517h2_8daaf6152771_cb7bf5808d99"
)

// behaviourAttacks adds the attacks that no single request gives away.
func (g *gen) behaviourAttacks() {
	// Password guessing that stays under any five-minute window: one try
	// every four minutes, all hour, from one address each.
	var slow []string
	for n, ip := range []netip.Addr{addrV4(203, 0, 113, 60), vpsV6(0x60)} {
		slow = append(slow, ip.String())
		for k := range int(g.cfg.Duration / (4 * time.Minute)) {
			g.add(request{t: g.at(time.Duration(k)*4*time.Minute + time.Duration(n)*time.Minute), ip: ip, method: "POST", path: "/login", status: 401, ua: browserUAs[2], ja4: browserJA4s[2], bytes: 50})
		}
	}
	g.attack(Attack{Name: ClassLowSlowLogin, Rule: "login_bruteforce", Scope: "ip.src", Values: slow, IPs: slow})

	// A scraper renting 64 addresses of one /24: each fetches a page every
	// 20 s, no assets, no cookie, no referer, one user agent.
	var block []string
	for k := range 64 {
		ip := addrV4(198, 18, 9, 10+k)
		block = append(block, ip.String())
		for j := range 90 {
			g.add(request{t: g.at(5*time.Minute + time.Duration(k)*300*time.Millisecond + time.Duration(j)*20*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(k*1000+j), status: 200, ua: browserUAs[0], ja4: browserJA4s[0]})
		}
	}
	g.attack(Attack{Name: ClassPrefixScrape, Rule: "prefix_scraping", Scope: "ip.src.prefix", Values: []string{"198.18.9.0/24"}, IPs: block})

	// Rotating residential proxies: addresses among real customers', a few
	// pages each, a browser's user agent over Python's TLS stack.
	var resi []string
	for range g.scaled(400, 100) {
		ip := g.freshAddr()
		resi = append(resi, ip.String())
		start := time.Duration(g.rng.Int64N(int64(g.cfg.Duration - 5*time.Minute)))
		for j := range 2 + g.rng.IntN(3) {
			g.add(request{t: g.at(start + time.Duration(j)*3*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(g.rng.IntN(5000)), status: 200, ua: browserUAs[0], ja4: ja4PythonRequests})
		}
	}
	g.attack(Attack{Name: ClassResidential, Rule: "tls_mismatch", Scope: "ip.src", Values: resi, IPs: resi})

	// Headless Chromium, its default user agent, from a few cloud addresses.
	var headless []string
	for k := range 6 {
		ip := addrV4(203, 0, 113, 70+k)
		headless = append(headless, ip.String())
		for j := range 40 {
			ua := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36"
			g.add(request{t: g.at(30*time.Minute + time.Duration(k)*time.Second + time.Duration(j)*5*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(j), status: 200, ua: ua, ja4: ja4Chromium})
		}
	}
	g.attack(Attack{Name: ClassHeadless, Rule: "tls_mismatch", Scope: "ip.src", Values: headless, IPs: headless})

	// A Firefox user agent over Chromium's TLS stack: a puppeteer script
	// that only changed its user agent.
	var ff []string
	for k := range 3 {
		ip := vpsV6(uint16(0x80 + k))
		ff = append(ff, ip.String())
		for j := range 10 {
			g.add(request{t: g.at(40*time.Minute + time.Duration(j)*10*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(j), status: 200, ua: browserUAs[2], ja4: ja4Chromium})
		}
	}
	g.attack(Attack{Name: ClassFirefoxOnWire, Rule: "tls_mismatch", Scope: "ip.src", Values: ff, IPs: ff})

	// Scrapers calling themselves Googlebot from a hosting provider.
	var fake []string
	for k, ip := range []netip.Addr{addrV4(198, 18, 20, 5), addrV4(198, 18, 21, 6), vpsV6(0x90)} {
		fake = append(fake, ip.String())
		for j := range 30 {
			g.add(request{t: g.at(15*time.Minute + time.Duration(k)*time.Minute + time.Duration(j)*4*time.Second), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(j), status: 200, ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", ja4: ja4GoHTTP})
		}
	}
	g.attack(Attack{Name: ClassFakeCrawler, Rule: "fake_crawler", Scope: "ip.src", Values: fake, IPs: fake})

	// A scraper that picks a new browser user agent for every request.
	var rot []string
	for n, ip := range []netip.Addr{addrV4(203, 0, 113, 90), vpsV6(0xa0)} {
		rot = append(rot, ip.String())
		for j := range 360 { // two a second for three minutes
			ua := fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:%d.0) Gecko/20100101 Firefox/%d.0", 90+j%45, 90+j%45)
			if j%2 == 1 {
				ua = fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.%d.0 Safari/537.36", 100+j%31, j)
			}
			g.add(request{t: g.at(35*time.Minute + time.Duration(n)*7*time.Minute + time.Duration(j)*500*time.Millisecond), ip: ip, method: "GET",
				path: "/product/" + strconv.Itoa(g.rng.IntN(5000)), status: 200, ua: ua})
		}
	}
	g.attack(Attack{Name: ClassUARotation, Rule: "ua_rotation", Scope: "ip.src", Values: rot, IPs: rot})

	// A flood that defeats caching with a random query on the home page.
	var bust []string
	for n, ip := range []netip.Addr{addrV4(198, 18, 30, 7), vpsV6(0xb0)} {
		bust = append(bust, ip.String())
		for j := range 600 { // twenty a second for thirty seconds
			g.add(request{t: g.at(44*time.Minute + time.Duration(n)*time.Minute + time.Duration(j)*50*time.Millisecond), ip: ip, method: "GET",
				path: "/?" + strconv.FormatUint(g.rng.Uint64()%1e12, 10), status: 200, ua: browserUAs[2], ref: "https://www.google.com/search?q=shop"})
		}
	}
	g.attack(Attack{Name: ClassCacheBusting, Rule: "cache_busting", Scope: "ip.src", Values: bust, IPs: bust})

	// A directory scanner going slowly: a new path every 20 s, all hour,
	// under 40 distinct in any five minutes.
	var scanner []string
	ip := addrV4(203, 0, 113, 80)
	scanner = append(scanner, ip.String())
	for k := range int(g.cfg.Duration / (20 * time.Second)) {
		g.add(request{t: g.at(time.Duration(k) * 20 * time.Second), ip: ip, method: "GET",
			path: fmt.Sprintf("/%x", g.rng.Uint32()), status: 404, ua: browserUAs[1], ja4: browserJA4s[1]})
	}
	g.attack(Attack{Name: ClassSlowScanner, Rule: "scan_404", Scope: "ip.src", Values: scanner, IPs: scanner})

	g.regularScrapers()
	g.campaignAttacks()
	g.sessionAttacks()
	g.fingerprintAttacks() // classes_fingerprint.go
}

// regularScrapers adds scripts that fetch one page, sleep a fixed time and
// fetch the next: under every volume limit, one address and one user agent
// each, no assets, nothing a signature or a fingerprint gives away (a
// library's user agent over its own TLS stack, or a browser's without
// TLS). Only their timing does: the interval is the sleep plus the
// answer's time, the same to within a few hundred milliseconds.
func (g *gen) regularScrapers() {
	var ips []string
	for _, s := range []struct {
		ip         netip.Addr
		ua, ja4    string
		start, run time.Duration
		sleep      time.Duration
	}{
		// python-requests with time.sleep(2), for twenty minutes.
		{addrV4(198, 18, 40, 12), "python-requests/2.32.3", ja4PythonRequests, 10 * time.Minute, 20 * time.Minute, 2 * time.Second},
		// A browser's user agent, no TLS, a page every 7 s for 40 minutes.
		{vpsV6(0xc0), browserUAs[0], "", 12 * time.Minute, 40 * time.Minute, 7 * time.Second},
		// Go's HTTP client every 30 s, all hour.
		{addrV4(198, 18, 41, 30), "Go-http-client/2.0", ja4GoHTTP, 0, 60 * time.Minute, 30 * time.Second},
	} {
		ips = append(ips, s.ip.String())
		for at, k := s.start, 0; at < s.start+s.run && at < g.cfg.Duration; k++ {
			path := "/product/" + strconv.Itoa(k)
			if k%5 == 0 {
				path = "/category/" + strconv.Itoa(k/5) + "?page=" + strconv.Itoa(1+k%3)
			}
			g.add(request{t: g.at(at), ip: s.ip, method: "GET", path: path, status: 200, ua: s.ua, ja4: s.ja4})
			at += s.sleep + time.Duration(50+g.rng.IntN(300))*time.Millisecond
		}
	}
	g.attack(Attack{Name: ClassRegular, Rule: "regular_scraping", Scope: "ip.src", Values: ips, IPs: ips})
}

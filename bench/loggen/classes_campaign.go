package loggen

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// Attacker classes of campaigns spread over many addresses, each address
// under every per-address limit, and of one client walking an API or a form.
const (
	ClassProbeCampaign  = "one WordPress probe per address, no user agent"
	ClassXMLRPCCampaign = "xmlrpc.php brute force over hundreds of addresses"
	ClassStuffingSpread = "credential stuffing, one or two tries per address"
	ClassSignupSpam     = "account-creation spam (GET then POST the form)"
	ClassPrefixRotation = "one /24 or /64 rotating browser user agents"
	ClassAPIEnumeration = "API enumeration (?page=N, one client)"
	ClassLoginRedirect  = "login brute force answered 302 to the form"
	ClassResidentialUA  = "residential proxies, 2-6 bare product pages each, one UA"
)

// Benign classes that look like those campaigns.
const (
	ClassUniversity    = "university /24 and /64"
	ClassCGNATPool     = "CGNAT pool (a /24 of shared addresses)"
	ClassNewsletter    = "newsletter click storm"
	ClassMobileSwitch  = "mobile clients changing networks"
	ClassSale          = "a sale starting: new visitors at once"
	ClassForgotLogin   = "people mistyping passwords and resetting them"
	ClassInfiniteScrol = "infinite-scroll users paging an API"
	ClassSEOCrawler    = "AhrefsBot from its published range"
	ClassHealthNoUA    = "load balancer health checks without a user agent"
)

// NonBrowser lists the benign classes whose clients cannot run a browser:
// for them a challenge is harm, not friction.
var NonBrowser = map[string]bool{
	ClassCrawler: true, ClassUptime: true, ClassACME: true, ClassWebhook: true,
	ClassSEOCrawler: true, ClassHealthNoUA: true, ClassFeedAPI: true,
}

// between returns a random whole number in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.rng.IntN(hi-lo+1) }

// freshAddr returns a residential address no actor has yet.
func (g *gen) freshAddr() netip.Addr { return g.unused(g.benignAddr) }

// unused draws addresses from next until one is no actor's yet.
func (g *gen) unused(next func() netip.Addr) netip.Addr {
	ip := next()
	for g.labels.Actors[ip.String()] != "" {
		ip = next()
	}
	return ip
}

// hostV4 and hostV6 are addresses of the attackers' hosting networks.
func hostV4(c, d int) netip.Addr { return addrV4(198, 18, c, d) }

func hostV6(block, n int) netip.Addr {
	b := attackV6.Addr().As16()
	b[7], b[14], b[15] = byte(block), byte(n>>8), byte(n)
	return netip.AddrFrom16(b)
}

// campaignAttacks adds the campaigns of issue 21, their sizes and timings
// drawn from the run's seed.
func (g *gen) campaignAttacks() {
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	// One request per address for a WordPress path, no user agent, on a site
	// without WordPress; hosting addresses, IPv4 and IPv6.
	wp := []string{"/wp-admin/", "/blog/wp-admin/", "/wordpress/wp-admin/", "/wp/wp-admin/", "/wp-login.php", "/wp-includes/wlwmanifest.xml"}
	var probe []string
	start := time.Duration(g.rng.Int64N(int64(span / 2)))
	for k := range g.between(24, 40) {
		ip := hostV4(60+k%4, 10+k)
		if k%3 == 0 {
			ip = hostV6(0x60, k)
		}
		probe = append(probe, ip.String())
		g.add(request{t: g.at(start + time.Duration(g.rng.Int64N(int64(20*time.Minute)))), ip: ip, method: "GET", path: wp[g.rng.IntN(len(wp))], status: 404})
	}
	g.attack(Attack{Name: ClassProbeCampaign, Rule: "probe_campaign", Scope: "http.host", Values: []string{"shop.example"}, IPs: probe})

	// xmlrpc.php brute force on a site that is not WordPress: hundreds of
	// residential addresses (a botnet), 2-10 POSTs each, one user agent.
	var xmlrpc []string
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	ua := "Mozilla/5.0 (Windows NT 6.1; WOW64; rv:" + strconv.Itoa(g.between(40, 60)) + ".0) Gecko/20100101 Firefox/" + strconv.Itoa(g.between(40, 60)) + ".0"
	for range g.between(300, 440) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassXMLRPCCampaign, true)
		xmlrpc = append(xmlrpc, ip.String())
		at := start + time.Duration(g.rng.Int64N(int64(20*time.Minute)))
		for range g.between(2, 10) {
			g.add(request{t: g.at(at), ip: ip, method: "POST", path: "/xmlrpc.php", status: 404 + g.rng.IntN(2), ua: ua})
			at += time.Duration(g.between(5, 40)) * time.Second
		}
	}
	g.attack(Attack{Name: ClassXMLRPCCampaign, Rule: "form_campaign", Scope: "http.norm.path", Values: []string{"/xmlrpc.php"}, IPs: xmlrpc})

	// Credential stuffing at one or two tries per address: a browser's user
	// agent and TLS stack, no referer, no cookie, the form shown again.
	var stuff []string
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	for range g.between(50, 80) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassStuffingSpread, true)
		stuff = append(stuff, ip.String())
		b := g.rng.IntN(len(browserUAs))
		at := start + time.Duration(g.rng.Int64N(int64(25*time.Minute)))
		for range g.between(1, 2) {
			g.add(request{t: g.at(at), ip: ip, method: "POST", path: "/login", status: 200, ua: browserUAs[b], ja4: browserJA4s[b]})
			at += time.Duration(g.between(20, 300)) * time.Second
		}
	}
	g.attack(Attack{Name: ClassStuffingSpread, Rule: "form_campaign", Scope: "http.norm.path", Values: []string{"/login"}, IPs: stuff})

	// Account-creation spam: each address fetches the form, then posts it
	// a moment later, no assets, no referer, no cookie kept.
	var spam []string
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	spamUA := browserUAs[g.rng.IntN(len(browserUAs))]
	for range g.between(300, 440) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassSignupSpam, true)
		spam = append(spam, ip.String())
		at := start + time.Duration(g.rng.Int64N(int64(30*time.Minute)))
		g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/join_form", status: 200, ua: spamUA})
		g.add(request{t: g.at(at + time.Duration(g.between(800, 4000))*time.Millisecond), ip: ip, method: "POST", path: "/join_form", status: 200 + 102*g.rng.IntN(2), ua: spamUA})
	}
	g.attack(Attack{Name: ClassSignupSpam, Rule: "form_campaign", Scope: "http.norm.path", Values: []string{"/join_form"}, IPs: spam})

	// A scraper renting a /24 (and a /64): every address fetches a bare page
	// every ~3 s with one of six browser user agents, no assets.
	uas := append(append([]string{}, browserUAs...), mobileUAs[0])
	var rot []string
	var nets []string
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	for n := range 2 {
		size := g.between(48, 64)
		var pfx netip.Prefix
		for k := range size {
			ip := hostV4(70, 10+k)
			if n == 1 {
				ip = hostV6(0x70, 10+k)
			}
			pfx, _ = ip.Prefix(map[bool]int{true: 24, false: 64}[ip.Is4()])
			rot = append(rot, ip.String())
			u := uas[k%len(uas)]
			at := start + time.Duration(n)*20*time.Minute + time.Duration(g.rng.Int64N(int64(30*time.Second)))
			for range g.between(200, 300) {
				g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/product/" + strconv.Itoa(g.rng.IntN(20000)), status: 200, ua: u})
				at += time.Duration(g.between(2500, 4200)) * time.Millisecond
			}
		}
		nets = append(nets, pfx.String())
	}
	g.attack(Attack{Name: ClassPrefixRotation, Rule: "prefix_scraping", Scope: "ip.src.prefix", Values: nets, IPs: rot})

	// One client paging through the product API, IPv4 and IPv6.
	var enum []string
	for n, ip := range []netip.Addr{hostV4(80, 5), hostV6(0x80, 5)} {
		enum = append(enum, ip.String())
		at := time.Duration(g.rng.Int64N(int64(span/2))) + time.Duration(n)*time.Minute
		for p := range g.between(600, 900) {
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/api/products?page=" + strconv.Itoa(p+1), status: 200, ua: "python-requests/2.32.3", ja4: ja4PythonRequests})
			at += time.Duration(g.between(600, 1500)) * time.Millisecond
		}
	}
	g.attack(Attack{Name: ClassAPIEnumeration, Rule: "api_enumeration", Scope: "ip.src", Values: enum, IPs: enum})

	// Password guessing against a form that answers a failure with 302 back
	// to itself (/login?error=1), like a success.
	var redirect []string
	for n, ip := range []netip.Addr{hostV4(81, 9), hostV6(0x81, 9)} {
		redirect = append(redirect, ip.String())
		at := time.Duration(g.rng.Int64N(int64(span/2))) + time.Duration(n)*time.Minute
		for range g.between(20, 40) {
			g.add(request{t: g.at(at), ip: ip, method: "POST", path: "/login", status: 302, ua: browserUAs[0], ref: "https://shop.example/login"})
			g.add(request{t: g.at(at + 300*time.Millisecond), ip: ip, method: "GET", path: "/login?error=1", status: 200, ua: browserUAs[0], ref: "https://shop.example/login"})
			at += time.Duration(g.between(6, 12)) * time.Second
		}
	}
	g.attack(Attack{Name: ClassLoginRedirect, Rule: "login_bruteforce", Scope: "ip.src", Values: redirect, IPs: redirect})

	// Rotating residential proxies driving a real browser stack (its JA4
	// matches the user agent): 2-6 product pages per address, no assets,
	// no referer, no cookie kept, one user agent.
	var resi []string
	b := g.rng.IntN(len(browserUAs))
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	for range g.between(100, 160) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassResidentialUA, true)
		resi = append(resi, ip.String())
		at := start + time.Duration(g.rng.Int64N(int64(20*time.Minute)))
		for range g.between(2, 6) {
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/product/" + strconv.Itoa(g.rng.IntN(20000)), status: 200, ua: browserUAs[b], ja4: browserJA4s[b]})
			at += time.Duration(g.between(2, 20)) * time.Second
		}
	}
	g.attack(Attack{Name: ClassResidentialUA, Rule: "browserless_pages", Scope: "ip.src", Values: resi, IPs: resi})
}

// assets adds the two to five assets (styles, scripts, images) a browser
// fetches within a second of viewing the page at path at at, with that
// page as their referer.
func (g *gen) assets(ip netip.Addr, ua, ja4, cookie, path string, at time.Duration) {
	for range 2 + g.rng.IntN(4) {
		g.add(request{t: g.at(at + time.Duration(g.rng.IntN(900))*time.Millisecond), ip: ip, method: "GET", path: statics[g.rng.IntN(len(statics))], status: 200, ua: ua, ja4: ja4, cookie: cookie, ref: "https://shop.example" + path})
	}
}

// land is a visit that starts on path, from a link in a mail or an ad (no
// referer, no cookie yet), with its assets, then views more pages with the
// cookie the site set and a referer. It returns the cookie.
func (g *gen) land(ip netip.Addr, ua, ja4 string, at time.Duration, path string, views int) string {
	cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
	g.labels.BenignCookies[cookie] = true
	ref := ""
	for v := range views {
		r := request{t: g.at(at), ip: ip, method: "GET", path: path, status: 200, ua: ua, ja4: ja4, cookie: cookie, ref: ref}
		if v == 0 {
			r.cookie = ""
		}
		g.add(r)
		g.assets(ip, ua, ja4, cookie, path, at)
		ref = "https://shop.example" + path
		path = pages[g.rng.IntN(len(pages))]
		at += time.Duration(g.between(5, 60)) * time.Second
	}
	return cookie
}

// campaignBenign adds the crowds that look like campaigns and are not.
func (g *gen) campaignBenign() {
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	// A university: one /24 and one /64, a student per address, a lecture's
	// worth arriving within two minutes, the rest through the hour.
	for n := range 2 {
		lecture, seated := time.Duration(g.rng.Int64N(int64(span))), g.between(12, 20)
		for k := range g.between(60, 120) {
			ip := addrV4(99, 49, 17, 2+k)
			if n == 1 {
				ip = ispV6Addr(19, 0x17, uint64(2+k))
			}
			g.benignActor(ip, ClassUniversity)
			at := time.Duration(g.rng.Int64N(int64(span)))
			if k < seated {
				at = lecture + time.Duration(g.rng.Int64N(int64(2*time.Minute)))
			}
			b := g.rng.IntN(len(browserUAs))
			g.browse(ip, browserUAs[b], browserJA4s[b], at, 2+g.rng.IntN(10))
		}
	}
	// A CGNAT pool: 16 to 24 addresses of one /24 (fewer with fewer benign
	// clients), each carrying phones.
	for k := range g.scaled(g.between(16, 24), 8) {
		ip := addrV4(61, 11, 201, 10+k)
		g.benignActor(ip, ClassCGNATPool)
		for range g.scaled(20, 6) {
			u := g.rng.IntN(len(mobileUAs))
			g.browse(ip, mobileUAs[u], mobileJA4s[u], time.Duration(g.rng.Int64N(int64(span))), 2+g.rng.IntN(8))
		}
	}
	// A newsletter: hundreds of people clicking the same link within
	// minutes, from their own addresses, no referer (a mail client).
	storm := time.Duration(g.rng.Int64N(int64(span)))
	for range g.scaled(g.between(300, 600), 100) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassNewsletter)
		b := g.rng.IntN(len(browserUAs))
		at := storm + time.Duration(g.rng.Int64N(int64(3*time.Minute)))
		g.land(ip, browserUAs[b], browserJA4s[b], at, "/landing/winter?utm_source=newsletter&utm_medium=email", g.between(1, 6))
	}
	// Phones moving from Wi-Fi to the carrier (IPv4, then IPv6) in one session.
	for range g.scaled(40, 10) {
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		u := g.rng.IntN(len(mobileUAs))
		at := time.Duration(g.rng.Int64N(int64(span)))
		ref := "-"
		for hop := range 3 {
			ip := g.freshAddr()
			g.benignActor(ip, ClassMobileSwitch)
			for range g.between(2, 5) {
				page := "/product/" + strconv.Itoa(g.rng.IntN(5000))
				r := request{t: g.at(at), ip: ip, method: "GET", path: page, status: 200, ua: mobileUAs[u], ja4: mobileJA4s[u], cookie: cookie, ref: ref}
				if hop == 0 && ref == "-" {
					r.cookie = ""
				}
				g.add(r)
				for range 2 + g.rng.IntN(3) {
					g.add(request{t: g.at(at + time.Duration(g.rng.IntN(800))*time.Millisecond), ip: ip, method: "GET", path: statics[g.rng.IntN(len(statics))], status: 200, ua: mobileUAs[u], ja4: mobileJA4s[u], cookie: cookie, ref: "https://shop.example" + page})
				}
				ref = "https://shop.example" + page
				at += time.Duration(g.between(8, 60)) * time.Second
			}
		}
	}
	// A sale opens: many new visitors within a minute, each landing bare on
	// /sale, then browsing and adding to the cart.
	sale := time.Duration(g.rng.Int64N(int64(span)))
	for range g.scaled(g.between(1000, 2000), 300) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassSale)
		b := g.rng.IntN(len(browserUAs))
		at := sale + time.Duration(g.rng.Int64N(int64(time.Minute)))
		cookie := g.land(ip, browserUAs[b], browserJA4s[b], at, "/sale", g.between(1, 5))
		g.add(request{t: g.at(at + 4*time.Second), ip: ip, method: "POST", path: "/cart/add", status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: "https://shop.example/sale"})
	}
	// People who mistype their password (the form shown again, or a 302
	// to /login?error=1) and some who reset it, from a browser.
	for range g.scaled(60, 20) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassForgotLogin)
		b := g.rng.IntN(len(browserUAs))
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := time.Duration(g.rng.Int64N(int64(span)))
		base := request{ip: ip, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: "https://shop.example/login"}
		r := base
		r.t, r.method, r.path, r.status, r.cookie, r.ref = g.at(at), "GET", "/login", 200, "", "https://shop.example/"
		g.add(r)
		for try := range g.between(1, 3) {
			r = base
			r.t, r.method, r.path, r.status = g.at(at+time.Duration(10+20*try)*time.Second), "POST", "/login", 200
			if g.rng.IntN(2) == 0 {
				r.status = 302
				f := base
				f.t, f.method, f.path, f.status = r.t.Add(200*time.Millisecond), "GET", "/login?error=1", 200
				g.add(f)
			}
			g.add(r)
		}
		if g.rng.IntN(3) == 0 {
			r = base
			r.t, r.method, r.path, r.status = g.at(at+2*time.Minute), "GET", "/forgot-password", 200
			g.add(r)
			r.t, r.method, r.status, r.ref = g.at(at+2*time.Minute+15*time.Second), "POST", 302, "https://shop.example/forgot-password"
			g.add(r)
		}
	}
	// Infinite scroll: people paging the product API a screen at a time.
	for range g.scaled(30, 10) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassInfiniteScrol)
		b := g.rng.IntN(len(browserUAs))
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := time.Duration(g.rng.Int64N(int64(span)))
		g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/products", status: 200, ua: browserUAs[b], ja4: browserJA4s[b]})
		for p := range g.between(10, 40) {
			at += time.Duration(g.between(2, 6)) * time.Second
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/api/products?page=" + strconv.Itoa(p+1), status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: "https://shop.example/products"})
		}
	}
	// AhrefsBot from its published range: many addresses of one /24, bare
	// page views, politely slow each.
	for k := range g.between(18, 24) {
		ip := addrV4(54, 36, 148, 10+k)
		g.benignActor(ip, ClassSEOCrawler)
		at := time.Duration(g.rng.Int64N(int64(span / 2)))
		for range g.between(30, 60) {
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/product/" + strconv.Itoa(g.rng.IntN(20000)), status: 200, ua: "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"})
			at += time.Duration(g.between(15, 40)) * time.Second
		}
	}
	// A load balancer's health checks, no user agent at all.
	for n := range 2 {
		ip := addrV4(63, 13, 9, 2+n)
		g.benignActor(ip, ClassHealthNoUA)
		for k := range int(g.cfg.Duration / (10 * time.Second)) {
			g.add(request{t: g.at(time.Duration(k)*10*time.Second + time.Duration(n)*3*time.Second), ip: ip, method: "GET", path: "/healthz", status: 200})
		}
	}
}

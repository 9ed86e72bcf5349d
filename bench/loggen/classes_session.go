package loggen

import (
	"fmt"
	"strconv"
	"time"
)

// Attacker classes without a browser's session habits: each claims a
// browser (its user agent and TLS stack agree) and stays under every
// per-address and per-campaign limit, but fetches no asset, keeps no
// cookie, posts a form it never loaded or mixes HTTP versions.
const (
	ClassHTMLScraper = "HTML-only scraper, forged referer, no cookie"
	ClassFormNoGet   = "contact-form spam posted without the form"
	ClassProtoMix    = "script mixing HTTP/1.0 and HTTP/1.1 (GET, then POST a form)"
)

// Benign classes that share one habit each with those.
const (
	ClassCachedAssets = "returning visitors with cached assets"
	ClassNoReferer    = "privacy browsers sending no referer"
	ClassProxy10      = "browsers behind a proxy downgrading to HTTP/1.0"
	ClassFeedAPI      = "feed readers and API clients"
)

// sessionAttacks adds the attacker classes of this file, their sizes and
// timings drawn from the run's seed.
func (g *gen) sessionAttacks() {
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	// A scraper that fetches product pages only, each address six to
	// twelve of them at a person's pace, with a referer of the site's own
	// and never the cookie the site set.
	var scrape []string
	b := g.rng.IntN(len(browserUAs))
	start := time.Duration(g.rng.Int64N(int64(span / 2)))
	for range g.between(40, 80) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassHTMLScraper, true)
		scrape = append(scrape, ip.String())
		at := start + time.Duration(g.rng.Int64N(int64(20*time.Minute)))
		for range g.between(6, 12) {
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/product/" + strconv.Itoa(g.rng.IntN(20000)), status: 200,
				ua: browserUAs[b], ja4: browserJA4s[b], ref: "https://shop.example/products"})
			at += time.Duration(g.between(4, 30)) * time.Second
		}
	}
	g.attack(Attack{Name: ClassHTMLScraper, Rule: "anomaly_score", Scope: "ip.src", Values: scrape, IPs: scrape})

	// Contact-form and comment spam: one to three POSTs per address, a
	// referer set to the form's page, never the page itself, never a
	// cookie.
	var spam []string
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	forms := []string{"/contact", "/blog/post-1/comment", "/blog/post-" + strconv.Itoa(g.between(2, 40)) + "/comment"}
	for range g.between(60, 120) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassFormNoGet, true)
		spam = append(spam, ip.String())
		u := g.rng.IntN(len(browserUAs))
		form := forms[g.rng.IntN(len(forms))]
		at := start + time.Duration(g.rng.Int64N(int64(30*time.Minute)))
		for range g.between(1, 3) {
			g.add(request{t: g.at(at), ip: ip, method: "POST", path: form, status: 302 - 102*g.rng.IntN(2),
				ua: browserUAs[u], ja4: browserJA4s[u], ref: "https://shop.example" + form})
			at += time.Duration(g.between(20, 200)) * time.Second
		}
	}
	g.attack(Attack{Name: ClassFormNoGet, Rule: "anomaly_score", Scope: "ip.src", Values: spam, IPs: spam})

	// A script that fetches the newsletter form with an HTTP/1.0 library
	// and posts it with an HTTP/1.1 one: no assets, no referer, no cookie.
	var mix []string
	start = time.Duration(g.rng.Int64N(int64(span / 2)))
	u := g.rng.IntN(len(browserUAs))
	for range g.between(40, 80) {
		ip := g.freshAddr()
		g.actor(ip.String(), ClassProtoMix, true)
		mix = append(mix, ip.String())
		at := start + time.Duration(g.rng.Int64N(int64(30*time.Minute)))
		g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/newsletter", status: 200, ua: browserUAs[u], ja4: browserJA4s[u], proto: "HTTP/1.0"})
		for range g.between(1, 2) {
			at += time.Duration(g.between(1000, 6000)) * time.Millisecond
			g.add(request{t: g.at(at), ip: ip, method: "POST", path: "/newsletter/subscribe", status: 200, ua: browserUAs[u], ja4: browserJA4s[u]})
		}
	}
	g.attack(Attack{Name: ClassProtoMix, Rule: "anomaly_score", Scope: "ip.src", Values: mix, IPs: mix})
}

// sessionBenign adds the people and programs that share a habit with
// sessionAttacks' classes.
func (g *gen) sessionBenign() {
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	// Returning visitors: their assets are cached, so they fetch pages
	// only, with the cookie of their last visit and a referer from the
	// second page on; one in three comes back to a form after its session
	// went idle and posts it (cookie and referer sent).
	for range g.scaled(80, 20) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassCachedAssets)
		b := g.rng.IntN(len(browserUAs))
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := time.Duration(g.rng.Int64N(int64(span)))
		ref := ""
		for range g.between(4, 14) {
			page := "/product/" + strconv.Itoa(g.rng.IntN(5000))
			if g.rng.IntN(3) == 0 {
				page = pages[g.rng.IntN(len(pages))]
			}
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: page, status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: ref})
			ref = "https://shop.example" + page
			at += time.Duration(g.between(5, 60)) * time.Second
		}
		if g.rng.IntN(3) == 0 {
			at += time.Duration(g.between(35, 50)) * time.Minute
			if at < g.cfg.Duration {
				g.add(request{t: g.at(at), ip: ip, method: "POST", path: "/contact", status: 302, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: "https://shop.example/contact"})
			}
		}
	}
	// Privacy browsers: a whole visit with its assets and the site's
	// cookie, but never a Referer.
	for range g.scaled(60, 15) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassNoReferer)
		b := g.rng.IntN(len(browserUAs))
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := time.Duration(g.rng.Int64N(int64(span)))
		for v := range g.between(3, 12) {
			page := pages[g.rng.IntN(len(pages))]
			r := request{t: g.at(at), ip: ip, method: "GET", path: page, status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie}
			if v == 0 {
				r.cookie = ""
			}
			g.add(r)
			for range 2 + g.rng.IntN(4) {
				g.add(request{t: g.at(at + time.Duration(g.rng.IntN(900))*time.Millisecond), ip: ip, method: "GET", path: statics[g.rng.IntN(len(statics))],
					status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie})
			}
			at += time.Duration(g.between(5, 60)) * time.Second
		}
	}
	// An office whose old proxy forwards some requests as HTTP/1.0: each
	// person's visit has its assets, cookie and referers, the versions
	// mixed.
	for range g.scaled(30, 10) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassProxy10)
		b := g.rng.IntN(len(browserUAs))
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := time.Duration(g.rng.Int64N(int64(span)))
		ref := ""
		proto := func() string {
			if g.rng.IntN(3) == 0 {
				return "HTTP/1.0"
			}
			return ""
		}
		for v := range g.between(2, 10) {
			page := pages[g.rng.IntN(len(pages))]
			r := request{t: g.at(at), ip: ip, method: "GET", path: page, status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: ref, proto: proto()}
			if v == 0 {
				r.cookie = ""
			}
			g.add(r)
			for range 2 + g.rng.IntN(4) {
				g.add(request{t: g.at(at + time.Duration(g.rng.IntN(900))*time.Millisecond), ip: ip, method: "GET", path: statics[g.rng.IntN(len(statics))],
					status: 200, ua: browserUAs[b], ja4: browserJA4s[b], cookie: cookie, ref: "https://shop.example" + page, proto: proto()})
			}
			ref = "https://shop.example" + page
			at += time.Duration(g.between(5, 60)) * time.Second
		}
	}
	// Feed readers polling the feeds, and API clients (a shop's mobile app,
	// some through a WebView with a browser's user agent, and a partner's
	// integration) posting orders and events: no page, no asset, no cookie,
	// a POST without a GET.
	feeds := []struct{ ua, path string }{
		{"Feedly/1.0 (+http://www.feedly.com/fetcher.html; 12 subscribers)", "/feed.xml"},
		{"NetNewsWire (RSS Reader; https://netnewswire.com/)", "/blog/rss"},
		{"Mozilla/5.0 (compatible; Miniflux/2.2.3; +https://miniflux.app)", "/feed/atom"},
		{"Tiny Tiny RSS/24.11 (https://tt-rss.org/)", "/blog/feed"},
	}
	apiClients := []struct{ ua, path string }{
		{"okhttp/4.12.0", "/api/v2/orders"},
		{"ShopApp/5.3.1 (iPhone; iOS 18.1; Scale/3.00)", "/api/v2/cart"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240905.003; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.81 Mobile Safari/537.36", "/api/v2/events"},
		{"partner-sync/2.1 (+https://partner.example/integration)", "/v1/stock"},
	}
	for range g.scaled(30, 10) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassFeedAPI)
		at := time.Duration(g.rng.Int64N(int64(span / 2)))
		if g.rng.IntN(2) == 0 {
			f := feeds[g.rng.IntN(len(feeds))]
			for at < g.cfg.Duration {
				g.add(request{t: g.at(at), ip: ip, method: "GET", path: f.path, status: 200 + 104*g.rng.IntN(2), ua: f.ua})
				at += time.Duration(g.between(5, 15)) * time.Minute
			}
			continue
		}
		c := apiClients[g.rng.IntN(len(apiClients))]
		for range g.between(3, 30) {
			m := "POST"
			if g.rng.IntN(3) == 0 {
				m = "GET"
			}
			g.add(request{t: g.at(at), ip: ip, method: m, path: c.path, status: 200, ua: c.ua})
			at += time.Duration(g.between(2, 90)) * time.Second
		}
	}
}

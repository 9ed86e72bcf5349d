package loggen

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/guardd/guardd/characteristics/mmdbtest"
)

// An attacker class that keeps one client stack — one user agent over one
// TLS fingerprint — and rotates it through proxies in many networks, each
// address too brief and too quiet for any per-address or per-network rule.
const (
	ClassFingerprintCampaign = "one UA+JA4 from many networks, bare target pages"
	// ClassPreviewScraper borrows the user agent of Messages' link
	// previews, which fake_crawler leaves alone.
	ClassPreviewScraper = "scraper borrowing the iMessage link-preview UA"
)

// Benign classes that share a user agent and a JA4 across many networks.
const (
	ClassAppFleet    = "a mobile app's installs sharing one UA+JA4"
	ClassCorpFleet   = "one company's managed browsers in several offices"
	ClassPrivacyFrom = "privacy relay users (one fingerprint, many egress networks)"
	ClassLinkPreview = "link previews fetched by phones (iMessage)"
)

// LinkPreviewUA is what iOS and macOS Messages send when they fetch a link's
// preview from the user's own device: Safari's user agent with the tokens of
// the Facebook and Twitter crawlers, whose preview markup they read.
const LinkPreviewUA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"

func init() {
	NonBrowser[ClassLinkPreview] = true // a preview fetcher runs no challenge
}

// Private-relay egress networks: many /24s and /64s of two relay operators.
var (
	relayV4 = []netip.Prefix{netip.MustParsePrefix("104.28.0.0/16"), netip.MustParsePrefix("172.225.0.0/16")}
	relayV6 = []netip.Prefix{netip.MustParsePrefix("2a02:26f7::/32"), netip.MustParsePrefix("2a09:bac0::/32")}
)

// withStream runs f with a random source of its own, drawn from the run's
// seed, so that the classes of this file leave the others' draws as they
// were.
func (g *gen) withStream(stream uint64, f func()) {
	old := g.rng
	g.rng = rand.New(rand.NewPCG(g.cfg.Seed, stream))
	f()
	g.rng = old
}

// fingerprintAttacks adds ClassFingerprintCampaign: a stock or price
// monitor driving one browser stack through rotating residential proxies.
// Every few minutes a round of workers starts, each on a fresh proxy
// address (120-240 in all, IPv4 and IPv6, in many /24s and /64s), and
// re-checks two to four target pages for a minute or few, three to six
// views, a forged Referer and never an asset or the site's cookie: fewer
// than four pages per address (session_no_assets), a Referer
// (browserless_pages, prefix_scraping) and a person's pace (the volume
// rules).
func (g *gen) fingerprintAttacks() {
	g.withStream(0xf1a4, func() {
		span := g.cfg.Duration - 10*time.Minute
		if span <= 0 {
			span = g.cfg.Duration
		}
		b := g.rng.IntN(len(browserUAs))
		ua, ja4 := browserUAs[b], browserJA4s[b]
		targets := make([]string, g.between(2, 4))
		for i := range targets {
			targets[i] = "/product/" + strconv.Itoa(g.between(5000, 19999))
		}
		refs := []string{"https://shop.example/", "https://shop.example/products", "https://www.google.com/"}
		start := time.Duration(g.rng.Int64N(int64(span / 2)))
		every := time.Duration(g.between(2, 5)) * time.Minute
		rounds := g.between(5, 10)
		size := g.between(120, 240)
		var ips []string
		for k := range size {
			ip := g.freshAddr()
			g.actor(ip.String(), ClassFingerprintCampaign, true)
			ips = append(ips, ip.String())
			at := start + time.Duration(k%rounds)*every + time.Duration(g.rng.Int64N(int64(every/2)))
			ref := refs[g.rng.IntN(len(refs))]
			first := g.rng.IntN(len(targets))
			for v := range g.between(3, 6) {
				g.add(request{t: g.at(at), ip: ip, method: "GET", path: targets[(first+v)%len(targets)], status: 200, ua: ua, ja4: ja4, ref: ref})
				at += time.Duration(g.between(10, 45)) * time.Second
			}
		}
		g.attack(Attack{Name: ClassFingerprintCampaign, Rule: "fingerprint_campaign", Scope: "http.norm.path", Values: targets, IPs: ips})

		// A scraper that calls itself a link preview (sites show previews
		// the full page) from residential proxies through a Safari stack:
		// product pages only, five to twelve each at a person's pace, no
		// asset, no cookie.
		var scr []string
		start = time.Duration(g.rng.Int64N(int64(span / 2)))
		for range g.between(20, 40) {
			ip := g.freshAddr()
			g.actor(ip.String(), ClassPreviewScraper, true)
			scr = append(scr, ip.String())
			at := start + time.Duration(g.rng.Int64N(int64(20*time.Minute)))
			for range g.between(5, 12) {
				g.add(request{t: g.at(at), ip: ip, method: "GET", path: "/product/" + strconv.Itoa(g.rng.IntN(20000)), status: 200, ua: LinkPreviewUA, ja4: browserJA4s[1]})
				at += time.Duration(g.between(5, 40)) * time.Second
			}
		}
		g.attack(Attack{Name: ClassPreviewScraper, Rule: "anomaly_score", Scope: "ip.src", Values: scr, IPs: scr})
	})
}

// fingerprintBenign adds the crowds that share a user agent and a JA4 over
// many networks and are people, and the link previews of phones.
func (g *gen) fingerprintBenign() {
	g.withStream(0xf1a5, func() {
		span := g.cfg.Duration - 10*time.Minute
		if span <= 0 {
			span = g.cfg.Duration
		}
		g.appFleet(span)
		g.corpFleet(span)
		g.privacyRelay(span)
		g.linkPreviews(span)
	})
}

// appFleet: a shop's iOS app, its screens in a WebView (one user agent, the
// platform's TLS stack) on phones everywhere; every install opens the same
// screens, fetches their assets and calls the API with the cookie it keeps
// across launches (a new install arrives without one).
func (g *gen) appFleet(span time.Duration) {
	ua := "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 ShopApp/5." + strconv.Itoa(g.between(2, 9)) + ".0"
	ja4 := browserJA4s[3]
	screens := []string{"/app/home", "/app/deals", "/app/cart"}
	for range g.scaled(g.between(150, 300), 60) {
		ip := g.freshAddr()
		g.benignActor(ip, ClassAppFleet)
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := time.Duration(g.rng.Int64N(int64(span)))
		fresh := g.rng.IntN(10) == 0
		for v := range g.between(1, 4) {
			screen := screens[0]
			if v > 0 {
				screen = screens[g.rng.IntN(len(screens))]
			}
			r := request{t: g.at(at), ip: ip, method: "GET", path: screen, status: 200, ua: ua, ja4: ja4, cookie: cookie}
			if fresh && v == 0 {
				r.cookie = ""
			}
			g.add(r)
			for range 2 + g.rng.IntN(3) {
				g.add(request{t: g.at(at + time.Duration(g.rng.IntN(700))*time.Millisecond), ip: ip, method: "GET", path: statics[g.rng.IntN(len(statics))], status: 200, ua: ua, ja4: ja4, cookie: cookie})
			}
			for range 3 + g.rng.IntN(8) {
				m := "GET"
				if g.rng.IntN(4) == 0 {
					m = "POST"
				}
				g.add(request{t: g.at(at + time.Duration(g.rng.IntN(8000))*time.Millisecond), ip: ip, method: m, path: apis[g.rng.IntN(len(apis))], status: 200, ua: ua, ja4: ja4, cookie: cookie})
			}
			at += time.Duration(g.between(10, 120)) * time.Second
		}
	}
}

// corpFleet: one company's managed browsers (one pinned Chrome, one user
// agent and JA4) in six to twelve offices, each behind a small NAT pool of
// its own /24; at nine the staff open the supplier portal at once. Most
// come back with the cookie of their last visit, a few arrive without one.
func (g *gen) corpFleet(span time.Duration) {
	ua, ja4 := browserUAs[0], browserJA4s[0]
	opening := time.Duration(g.rng.Int64N(int64(span)))
	for o := range g.between(6, 12) {
		pool := make([]netip.Addr, g.between(2, 4))
		for i := range pool {
			pool[i] = addrV4(62, 12, 20+o, 10+i)
			g.benignActor(pool[i], ClassCorpFleet)
		}
		for range g.scaled(g.between(8, 20), 4) {
			ip := pool[g.rng.IntN(len(pool))]
			at := opening + time.Duration(g.rng.Int64N(int64(3*time.Minute)))
			if g.rng.IntN(3) == 0 {
				at = time.Duration(g.rng.Int64N(int64(span)))
			}
			cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
			g.labels.BenignCookies[cookie] = true
			fresh := g.rng.IntN(10) == 0
			ref := ""
			path := "/b2b/portal"
			for v := range g.between(3, 12) {
				r := request{t: g.at(at), ip: ip, method: "GET", path: path, status: 200, ua: ua, ja4: ja4, cookie: cookie, ref: ref}
				if fresh && v == 0 {
					r.cookie = ""
				}
				g.add(r)
				g.assets(ip, ua, ja4, cookie, path, at)
				ref = "https://shop.example" + path
				path = "/b2b/orders"
				if g.rng.IntN(2) == 0 {
					path = "/product/" + strconv.Itoa(g.rng.IntN(5000))
				}
				at += time.Duration(g.between(10, 90)) * time.Second
			}
		}
	}
}

// relayAddr returns an egress address of the relay networks.
func (g *gen) relayAddr() netip.Addr {
	if g.rng.IntN(3) == 0 {
		b := relayV6[g.rng.IntN(len(relayV6))].Addr().As16()
		for i := 4; i < 16; i++ {
			b[i] = byte(g.rng.UintN(256))
		}
		return netip.AddrFrom16(b)
	}
	b := relayV4[g.rng.IntN(len(relayV4))].Addr().As4()
	b[2], b[3] = byte(g.rng.UintN(256)), byte(1+g.rng.UintN(254))
	return netip.AddrFrom4(b)
}

// privacyRelay: Safari users behind a privacy relay (iCloud Private
// Relay-like): one browser fingerprint, egress addresses in many /24s and
// /64s of the relay's networks, sometimes a new one between page views;
// an article shared widely brings many of them at once. Real visits: each
// page with its assets, the site's cookie once set.
func (g *gen) privacyRelay(span time.Duration) {
	b := 1 + 2*g.rng.IntN(2) // Safari on macOS or iOS
	ua, ja4 := browserUAs[b], browserJA4s[b]
	article := "/blog/post-" + strconv.Itoa(g.between(2, 40))
	wave := time.Duration(g.rng.Int64N(int64(span)))
	for range g.scaled(g.between(150, 300), 60) {
		ip := g.unused(g.relayAddr)
		g.benignActor(ip, ClassPrivacyFrom)
		cookie := fmt.Sprintf("s%016x", g.rng.Uint64())
		g.labels.BenignCookies[cookie] = true
		at := wave + time.Duration(g.rng.Int64N(int64(5*time.Minute)))
		path := article
		if g.rng.IntN(2) == 0 {
			at, path = time.Duration(g.rng.Int64N(int64(span))), pages[g.rng.IntN(len(pages))]
		}
		ref := ""
		for v := range g.between(1, 6) {
			if v > 0 && g.rng.IntN(4) == 0 { // the relay picked another egress
				ip = g.relayAddr()
				if g.labels.Actors[ip.String()] == "" {
					g.benignActor(ip, ClassPrivacyFrom)
				}
			}
			r := request{t: g.at(at), ip: ip, method: "GET", path: path, status: 200, ua: ua, ja4: ja4, cookie: cookie, ref: ref}
			if v == 0 {
				r.cookie = ""
			}
			g.add(r)
			g.assets(ip, ua, ja4, cookie, path, at)
			ref = "https://shop.example" + path
			path = pages[g.rng.IntN(len(pages))]
			at += time.Duration(g.between(5, 90)) * time.Second
		}
	}
}

// linkPreviews: a page shared in group chats; the Messages app of every
// phone that receives it fetches its preview from the phone's own
// (residential or mobile) address, once, and sometimes the og:image.
func (g *gen) linkPreviews(span time.Duration) {
	shared := []string{"/blog/post-" + strconv.Itoa(g.between(2, 40)), "/product/" + strconv.Itoa(g.rng.IntN(5000)), "/sale"}
	for _, page := range shared {
		wave := time.Duration(g.rng.Int64N(int64(span)))
		for range g.scaled(g.between(25, 60), 10) {
			ip := g.freshAddr()
			g.benignActor(ip, ClassLinkPreview)
			ja4 := browserJA4s[3] // iOS; macOS Messages shares Safari's
			if g.rng.IntN(4) == 0 {
				ja4 = browserJA4s[1]
			}
			at := wave + time.Duration(g.rng.Int64N(int64(20*time.Minute)))
			g.add(request{t: g.at(at), ip: ip, method: "GET", path: page, status: 200, ua: LinkPreviewUA, ja4: ja4})
			if g.rng.IntN(2) == 0 {
				g.add(request{t: g.at(at + time.Duration(200+g.rng.IntN(800))*time.Millisecond), ip: ip, method: "GET", path: "/static/og/" + page[1:] + ".jpg", status: 200, ua: LinkPreviewUA, ja4: ja4})
			}
		}
	}
}

// relayNetworks are the relay's networks for the ASN database.
func relayNetworks() []mmdbtest.Network {
	var out []mmdbtest.Network
	for i, p := range append(append([]netip.Prefix{}, relayV4...), relayV6...) {
		out = append(out, mmdbtest.Network{Prefix: p, ASN: uint32(36180 + i%2*3), Org: "Privacy Relay Egress", Country: "US"})
	}
	return out
}

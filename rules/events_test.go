package rules

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// eventGen draws events from pools that mix ordinary browsing, API calls,
// logins, probes and tools, with odd cases (mixed case, non-ASCII, IPv6,
// IPv4-mapped addresses, missing fields) in small proportion.
type eventGen struct {
	r *rand.Rand
}

func newEventGen(seed uint64) *eventGen { return &eventGen{r: rand.New(rand.NewPCG(seed, 42))} }

func (g *eventGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

var (
	genPaths = []string{
		"/", "/index.html", "/products/42", "/blog/2024/05/hello-world", "/search", "/cart",
		"/static/app.3f2a.js", "/assets/main.css", "/img/logo.PNG", "/favicon.ico", "/fonts/x.woff2",
		"/api/v1/items", "/api/orders", "/graphql", "/_next/data/x.json", "/wp-json/wp/v2/posts",
		"/login", "/Login", "/signin", "/wp-login.php", "/api/auth/login", "/users/sign_in",
		"/.env", "/app/.env", "/.git/config", "/.GIT/HEAD", "/backup.sql", "/index.php.bak", "/config.php~",
		"/wp-admin/", "/phpMyAdmin/index.php", "/server-status", "/cgi-bin/luci", "/actuator/health",
		"/robots.txt", "/sitemap.xml", "/caf\u00e9", "/\u0130stanbul", "/a\xffb", "", "/x.tar.gz.bak",
		"/hello.JS", "/manager/html", "/random/" + "deep/path",
	}
	genUAs = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
		"curl/8.5.0", "python-requests/2.31.0", "Go-http-client/1.1", "",
		"sqlmap/1.7.2#stable (https://sqlmap.org)", "Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:007808)",
		"Mozilla/5.0 (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)",
		"masscan/1.3 (https://github.com/robertdavidgraham/masscan)", "Mozilla/5.0 zgrab/0.x",
		"Nuclei - Open-source project (github.com/projectdiscovery/nuclei)", "WPScan v3.8.25 (https://wpscan.com/wordpress-security-scanner)",
		"DirBuster-1.0-RC1 (http://www.owasp.org/index.php/Category:OWASP_DirBuster_Project)", "gobuster/3.6",
		"Fuzz Faster U Fool v2.1.0-dev", "SQLMAP", "\u212aali sqlmap", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	}
	genMethods  = []string{"GET", "GET", "GET", "GET", "POST", "POST", "HEAD", "PUT", "OPTIONS", "get"}
	genStatuses = []int{200, 200, 200, 200, 304, 301, 302, 401, 403, 404, 404, 429, 500, 502, 0}
	genJA4      = []string{"t13d1516h2_8daaf6152771_02713d6af862", "t13d1715h2_5b57614c22b0_3d5424432f57", "q13d0312h3_55b375c5d22e_06cda9e17597"}
	genDests    = []string{"document", "empty", "script", "image", "style", "iframe"}
	genASNs     = []uint32{0, 0, 7922, 16509, 14061, 24940, 3320}
	genAddrs    = []string{"203.0.113.7", "198.51.100.23", "10.1.2.3", "192.168.1.5", "2001:db8::1", "::ffff:10.9.8.7", "2001:db8:1::42", "fe80::1%eth0", "100.64.0.1"}
)

// next fills e with a new event.
func (g *eventGen) next(e *characteristics.Event) {
	e.Reset()
	r := g.r
	e.Time = time.Unix(1_700_000_000+int64(r.IntN(86400)), int64(r.IntN(1e9)))
	e.Source = characteristics.Source(r.IntN(4))
	if r.IntN(20) != 0 {
		e.IP = netip.MustParseAddr(g.pick(genAddrs))
		if r.IntN(3) == 0 {
			e.IP = netip.AddrFrom4([4]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
		}
		if e.IP.Zone() == "" {
			bits := 24
			if e.IP.Is6() {
				bits = 64
			}
			e.Prefix, _ = e.IP.Prefix(bits)
		}
		e.Port = uint16(r.IntN(65536))
	}
	e.ASN = genASNs[r.IntN(len(genASNs))]
	if e.ASN != 0 {
		e.Country = g.pick([]string{"US", "DE", "FR", ""})
	}
	e.Host = g.pick([]string{"example.com", "www.example.com", ""})
	e.Method = g.pick(genMethods)
	e.Path = g.pick(genPaths)
	if r.IntN(4) == 0 {
		e.Query = "q=1&page=" + string(rune('0'+r.IntN(10)))
	}
	e.Protocol = g.pick([]string{"HTTP/1.1", "HTTP/2.0", ""})
	e.Status = genStatuses[r.IntN(len(genStatuses))]
	e.UserAgent = g.pick(genUAs)
	if r.IntN(3) == 0 {
		e.Referer = "https://example.com/"
	}
	e.BytesSent = int64(r.IntN(100000))
	e.RequestTime = float64(r.IntN(5000)) / 1000
	if r.IntN(2) == 0 {
		e.SetHeader("Accept", "text/html")
		e.SetHeader("User-Agent", e.UserAgent)
	}
	if r.IntN(4) == 0 {
		e.SetHeader("X-Requested-With", "XMLHttpRequest")
	}
	if r.IntN(2) == 0 {
		e.SetHeader("Sec-Fetch-Dest", g.pick(genDests))
	}
	if r.IntN(3) == 0 {
		e.Cookies = append(e.Cookies, characteristics.Field{Name: "session", Value: "abc" + string(rune('a'+r.IntN(26)))})
	}
	if r.IntN(3) == 0 {
		e.Vars = append(e.Vars, characteristics.Field{Name: "upstream_status", Value: g.pick([]string{"200", "502", "-", "504"})})
	}
	if r.IntN(2) == 0 {
		e.TLS = characteristics.TLS{SNI: e.Host, ALPN: "h2", JA4: g.pick(genJA4), JA3: "771,4865-4866,0-23,29-23,0"}
		e.JA4H = "ge11nn05enus_6e3c5d2b1a0f_000000000000_000000000000"
	}
}

// realisticMix is a benchmark mix: mostly ordinary browsing, with a few
// percent of logins, probes and tools.
func realisticMix(n int) []characteristics.Event {
	r := rand.New(rand.NewPCG(7, 7))
	browsers := genUAs[:3]
	pages := []string{"/", "/products/42", "/blog/2024/05/hello-world", "/search", "/cart", "/category/shoes?page=2"}
	assets := []string{"/static/app.3f2a.js", "/assets/main.css", "/img/logo.png", "/fonts/x.woff2", "/img/hero.webp"}
	apis := []string{"/api/v1/items", "/api/cart", "/graphql"}
	out := make([]characteristics.Event, n)
	for i := range out {
		e := &out[i]
		e.Time = time.Unix(1_700_000_000+int64(i), 0)
		e.Source = characteristics.SourceNginxLog
		e.IP = netip.AddrFrom4([4]byte{203, 0, byte(r.IntN(4)), byte(r.IntN(256))})
		e.Prefix, _ = e.IP.Prefix(24)
		e.ASN = []uint32{0, 7922, 3320, 16509}[r.IntN(4)]
		e.Method, e.Status = "GET", 200
		e.UserAgent = browsers[r.IntN(len(browsers))]
		e.BytesSent, e.RequestTime = int64(r.IntN(50000)), 0.012
		switch x := r.IntN(100); {
		case x < 45:
			e.Path = assets[r.IntN(len(assets))]
			e.SetHeader("Sec-Fetch-Dest", "script")
		case x < 70:
			e.Path = pages[r.IntN(len(pages))]
			e.SetHeader("Sec-Fetch-Dest", "document")
		case x < 88:
			e.Path = apis[r.IntN(len(apis))]
			e.SetHeader("X-Requested-With", "XMLHttpRequest")
		case x < 92:
			e.Method, e.Path, e.Status = "POST", "/login", []int{200, 302, 401}[r.IntN(3)]
		case x < 95:
			e.Path, e.Status = []string{"/missing-page", "/old/link"}[r.IntN(2)], 404
		case x < 97:
			e.Path, e.Status = []string{"/.env", "/wp-login.php", "/.git/config", "/backup.sql"}[r.IntN(4)], 404
		default:
			e.UserAgent = genUAs[7+r.IntN(8)]
			e.Path, e.Status = "/search", 404
		}
		if r.IntN(2) == 0 {
			e.TLS.JA4 = genJA4[r.IntN(len(genJA4))]
		}
	}
	return out
}

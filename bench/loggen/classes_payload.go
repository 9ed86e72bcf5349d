package loggen

import (
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// Benign classes whose requests look like payloads to a signature: what
// people type and what dashboards send. Rules may doubt them (challenge a
// few), never refuse them.
const (
	ClassSearchReferer = "visitors from search engines with long queries"
	ClassBookSearch    = "searches for programming books"
	ClassQueryLanguage = "dashboard query languages (PromQL, Lucene, JSON filters)"
)

// searchQueries are what people search for on a search engine before
// landing on the site, or in the site's own search box: programming books
// and tutorials whose titles hold code.
var searchQueries = []string{
	"select * from readers where genre = 'science fiction' order by title",
	"javascript: the definitive guide 7th edition pdf",
	"<script> tags tutorial for beginners",
	"sql union select explained with examples",
	"how to use printf(\"%d\") in c",
	"/etc/passwd file format explained",
	"learning bash: rm -rf safely and other shell tips",
	"the art of computer programming volume 1 second hand",
	"c++ primer 5th edition used",
	"php eval() security best practices book",
	"onload event javascript example",
	"drop table students; little bobby tables poster",
	"1=1 sql injection book for developers",
	"effective go concurrency patterns",
	"python crash course 3rd edition",
	"regular expressions cookbook [a-z]+ patterns",
}

// dashboardQueries are requests of Grafana, Prometheus, Kibana and a
// shop's admin table, as their front ends send them.
var dashboardQueries = []string{
	"/api/v1/query?query=" + url.QueryEscape(`sum(rate(http_requests_total{job="api",code=~"5.."}[5m])) by (instance)`),
	"/api/v1/query_range?query=" + url.QueryEscape(`histogram_quantile(0.99, sum(rate(http_request_duration_seconds_bucket[5m])) by (le))`) + "&start=1700000000&end=1700003600&step=15",
	"/api/v1/series?match[]=" + url.QueryEscape(`up{job=~"node|api"}`),
	"/loki/api/v1/query_range?query=" + url.QueryEscape(`{app="nginx"} |= "error" != "healthcheck" | json | status >= 500`) + "&limit=100",
	"/app/discover?_g=" + url.QueryEscape("(time:(from:now-15m,to:now))") + "&_a=" + url.QueryEscape(`(query:(language:lucene,query:'status:500 AND path:"/login" OR message:(select AND from)'))`),
	"/api/orders?filter=" + url.QueryEscape(`{"status":{"$in":["open","paid"]},"note":{"$regex":"select.*from"}}`) + "&page=2",
	"/api/search?q=" + url.QueryEscape(`title:(union OR "drop table") AND NOT status:deleted`),
	"/d/api-latency?var-query=" + url.QueryEscape(`label_values(up, instance)`) + "&from=now-6h&to=now",
}

var searchEngines = []string{
	"https://www.google.com/search?q=",
	"https://www.bing.com/search?q=",
	"https://duckduckgo.com/?q=",
	"https://search.brave.com/search?q=",
}

// payloadLookalikes adds the benign classes of this file.
func (g *gen) payloadLookalikes() {
	span := g.cfg.Duration - 10*time.Minute
	if span <= 0 {
		span = g.cfg.Duration
	}
	newActor := func(class string) (netip.Addr, int, time.Duration) {
		ip := g.freshAddr()
		g.benignActor(ip, class)
		b := g.rng.IntN(len(browserUAs))
		g.labels.BenignJA4[browserJA4s[b]] = true
		return ip, b, time.Duration(g.rng.Int64N(int64(span)))
	}
	// Visitors landing from a search engine whose query was long and full of
	// code, then browsing.
	for range g.scaled(60, 10) {
		ip, b, t := newActor(ClassSearchReferer)
		q := searchQueries[g.rng.IntN(len(searchQueries))] + " " + searchQueries[g.rng.IntN(len(searchQueries))]
		ref := searchEngines[g.rng.IntN(len(searchEngines))] + url.QueryEscape(q) + "&source=hp&ei=" + strconv.FormatUint(g.rng.Uint64(), 36)
		g.add(request{t: g.at(t), ip: ip, method: "GET", path: pages[g.rng.IntN(len(pages))], status: 200, ua: browserUAs[b], ja4: browserJA4s[b], ref: ref})
		g.browse(ip, browserUAs[b], browserJA4s[b], t+3*time.Second, 2+g.rng.IntN(6))
	}
	// A bookshop's search box: a few searches each, one in four of them for
	// a title that holds code.
	for range g.scaled(40, 8) {
		ip, b, t := newActor(ClassBookSearch)
		for k := range 2 + g.rng.IntN(4) {
			q := "science fiction classics"
			if g.rng.IntN(4) == 0 {
				q = searchQueries[g.rng.IntN(len(searchQueries))]
			}
			g.add(request{t: g.at(t + time.Duration(k)*20*time.Second), ip: ip, method: "GET", path: "/search?q=" + url.QueryEscape(q),
				status: 200, ua: browserUAs[b], ja4: browserJA4s[b], ref: "https://shop.example/"})
		}
	}
	// Operators on dashboards: the same panels refreshed every 30 s.
	for range g.scaled(15, 4) {
		ip, b, t := newActor(ClassQueryLanguage)
		for k := range 20 {
			g.add(request{t: g.at(t + time.Duration(k)*30*time.Second), ip: ip, method: "GET", path: dashboardQueries[(k+g.rng.IntN(2))%len(dashboardQueries)],
				status: 200, ua: browserUAs[b], ja4: browserJA4s[b], ref: "https://grafana.example/d/api-latency"})
		}
	}
}

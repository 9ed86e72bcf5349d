package coraza

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/signature"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/rules"
)

// events parses testdata/access.log.gz, the realistic log the rules
// benchmarks use.
func events(tb testing.TB) []characteristics.Event {
	tb.Helper()
	f, err := os.Open("../../testdata/access.log.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	format := nginxlog.MustCompile(nginxlog.Combined)
	var out []characteristics.Event
	var e characteristics.Event
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		if format.Parse(bytes.Clone(sc.Bytes()), &e) == nil {
			out = append(out, e.Clone())
		}
	}
	return out
}

func newWAF(tb testing.TB) coraza.WAF {
	tb.Helper()
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().
		WithRootFS(coreruleset.FS).
		WithDirectives("Include @coraza.conf-recommended\nInclude @crs-setup.conf.example\nInclude @owasp_crs/*.conf\nSecRuleEngine On"))
	if err != nil {
		tb.Fatal(err)
	}
	return waf
}

// inspect runs the request phases of CRS on e (no body: logs have none) and
// reports whether CRS would block it.
func inspect(waf coraza.WAF, e *characteristics.Event) bool {
	tx := waf.NewTransaction()
	defer tx.Close()
	tx.ProcessConnection(e.IP.String(), int(e.Port), "127.0.0.1", 80)
	uri := e.Path
	if e.Query != "" {
		uri += "?" + e.Query
	}
	proto := e.Protocol
	if proto == "" {
		proto = "HTTP/1.1"
	}
	tx.ProcessURI(uri, e.Method, proto)
	tx.AddRequestHeader("Host", "shop.example")
	if e.UserAgent != "" {
		tx.AddRequestHeader("User-Agent", e.UserAgent)
	}
	if e.Referer != "" {
		tx.AddRequestHeader("Referer", e.Referer)
	}
	tx.AddRequestHeader("Accept", "*/*")
	var it *types.Interruption
	if it = tx.ProcessRequestHeaders(); it == nil {
		it, _ = tx.ProcessRequestBody()
	}
	return it != nil
}

// prefilter is what guardd computes anyway: whether any signature class or
// libinjection prefilter fires on a field of e.
func prefilter(e *characteristics.Event) bool {
	return signature.Scan(e.NormPath()) != 0 || signature.Scan(e.NormQuery()) != 0 ||
		signature.Scan(e.NormUserAgent())&^(1<<signature.ScannerUA) != 0 || signature.Scan(e.NormReferer()) != 0 ||
		signature.QuerySQLi(e.Query) || signature.QueryXSS(e.Query) || e.Anomalies() != 0
}

func BenchmarkCorazaCRS(b *testing.B) {
	evs := events(b)
	waf := newWAF(b)
	b.Run("every_event", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			inspect(waf, &evs[i%len(evs)])
			i++
		}
	})
	b.Run("behind_prefilter", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			e := &evs[i%len(evs)]
			if prefilter(e) {
				inspect(waf, e)
			}
			i++
		}
	})
	s, err := rules.Builtin(rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("guardd_builtin", func(b *testing.B) {
		b.ReportAllocs()
		var m rules.Matches
		var e characteristics.Event
		i := 0
		for b.Loop() {
			// A fresh copy, so normalisation is computed as for a new line.
			e = evs[i%len(evs)].Clone()
			s.Eval(&e, &m)
			i++
		}
	})
}

// TestCorazaVerdicts prints how many lines of the test log CRS would block,
// how many the prefilter passes, and how many CRS blocks that the prefilter
// does not pass.
func TestCorazaVerdicts(t *testing.T) {
	evs := events(t)
	waf := newWAF(t)
	var blocked, passed, missed int
	for i := range evs {
		e := &evs[i]
		crs := inspect(waf, e)
		pf := prefilter(e)
		if crs {
			blocked++
		}
		if pf {
			passed++
		}
		if crs && !pf {
			missed++
			if missed <= 10 {
				t.Logf("CRS blocks, prefilter passes over: %s %s?%s ua=%q", e.Method, e.Path, e.Query, e.UserAgent)
			}
		}
	}
	t.Logf("%d events: CRS blocks %d; prefilter passes %d (%s%%); CRS blocks outside the prefilter %d",
		len(evs), blocked, passed, strconv.FormatFloat(100*float64(passed)/float64(len(evs)), 'f', 2, 64), missed)
	_ = fmt.Sprint()
}

package loggentest

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/nginxlog"
)

// Seed is the labelled log's seed: the same log in every package.
const Seed = 14

// Events generates the labelled log (Seed, every class of loggen, benign
// clients besides the campaigns) and returns its lines parsed and enriched,
// in order. The events' strings point into the generated log, which they
// keep alive. The enricher and its database are closed and removed by tb's
// cleanup; a generation, parse or database error fails tb.
func Events(tb testing.TB, benign int) []characteristics.Event {
	tb.Helper()
	var buf bytes.Buffer
	labels, err := loggen.Generate(&buf, loggen.Config{Seed: Seed, Benign: benign})
	if err != nil {
		tb.Fatal(err)
	}
	db := filepath.Join(tb.TempDir(), "geo.mmdb")
	if err := labels.GeoDB(db); err != nil {
		tb.Fatal(err)
	}
	en, err := characteristics.NewEnricher(characteristics.EnrichConfig{ASNDatabase: db})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { en.Close() })
	f := nginxlog.MustCompile(loggen.GuarddLogFormat)
	data := buf.Bytes()
	events := make([]characteristics.Event, 0, labels.Lines)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		var ev characteristics.Event
		if err := f.Parse(line, &ev); err != nil {
			tb.Fatalf("loggentest: line %d: %v", len(events)+1, err)
		}
		en.Enrich(&ev)
		events = append(events, ev)
	}
	return events
}

package loggentest_test

import (
	"testing"

	"github.com/guardd/guardd/bench/loggen/loggentest"
)

// TestEvents: every line becomes an event, enriched from the log's own
// database (so some carry an ASN), with the fields the rules read.
func TestEvents(t *testing.T) {
	events := loggentest.Events(t, 20)
	if len(events) == 0 {
		t.Fatal("no events")
	}
	asn := 0
	for i, e := range events {
		if !e.IP.IsValid() || e.Path == "" || e.Time.IsZero() {
			t.Fatalf("event %d lacks its address, path or time: %+v", i, e)
		}
		if e.ASN != 0 {
			asn++
		}
	}
	if asn == 0 {
		t.Errorf("none of %d events enriched with an ASN", len(events))
	}
}

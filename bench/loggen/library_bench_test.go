package loggen_test

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/guardd/guardd/bench/loggen/loggentest"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/cputime"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// BenchmarkLibraryPerEvent measures, per line of the labelled log, the whole
// built-in library's evaluation (every rule's count and mitigate) plus the
// engine's keying and counting (distinct and windowed counters included),
// cycling over the log with time moved forward on each pass.
func BenchmarkLibraryPerEvent(b *testing.B) {
	events := loggentest.Events(b, 1000)
	set, err := rules.Builtin(rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("eval", func(b *testing.B) {
		var m rules.Matches
		i := 0
		b.ReportAllocs()
		cpu0 := cputime.Process()
		for b.Loop() {
			set.Eval(&events[i%len(events)], &m)
			i++
		}
		cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
	})
	b.Run("eval-hostile", func(b *testing.B) {
		// Every event a path and a user agent never seen before: what the
		// rules remember across events never helps.
		hostile := uniqueEvents(events)
		var m rules.Matches
		i := 0
		b.ReportAllocs()
		cpu0 := cputime.Process()
		for b.Loop() {
			set.Eval(&hostile[i%len(hostile)], &m)
			i++
		}
		cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
	})
	b.Run("eval+key", func(b *testing.B) { // Prepare: eval, and each match keyed and hashed
		eng, err := engine.New(engine.Config{Rules: set})
		if err != nil {
			b.Fatal(err)
		}
		var m engine.Matches
		i := 0
		b.ReportAllocs()
		cpu0 := cputime.Process()
		for b.Loop() {
			m.Reset()
			eng.Prepare(&events[i%len(events)], &m)
			i++
		}
		cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
	})
	for _, bc := range []struct {
		name      string
		countOnly bool
	}{{"eval+count", false}, {"eval+count/count-only", true}} { // count-only: as the daemon, without the matches only a replay's report reads
		b.Run(bc.name, func(b *testing.B) {
			eng, err := engine.New(engine.Config{Rules: set, CountOnly: bc.countOnly})
			if err != nil {
				b.Fatal(err)
			}
			var m engine.Matches
			var trips []engine.Trip
			i := 0
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				ev := &events[i%len(events)]
				t := ev.Time.Add(time.Duration(i/len(events)) * 2 * time.Hour)
				m.Reset()
				eng.Prepare(ev, &m)
				trips = eng.Apply(t, m.Items, m.Keys, trips[:0])
				i++
			}
			cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
		})
	}
	b.Run("eval+count/new-addresses", func(b *testing.B) { // hostile: no address seen twice
		eng, err := engine.New(engine.Config{Rules: set})
		if err != nil {
			b.Fatal(err)
		}
		var m engine.Matches
		var trips []engine.Trip
		var one characteristics.Event
		i := 0
		b.ReportAllocs()
		cpu0 := cputime.Process()
		for b.Loop() {
			ev := &one
			*ev = events[i%len(events)]
			// A new address on every event, IPv4 then IPv6, and a new
			// network every 256 (the enricher's /24 and /64).
			if i&1 == 0 {
				ev.IP = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
				ev.Prefix = netip.PrefixFrom(ev.IP, 24).Masked()
			} else {
				ev.IP = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 4: byte(i >> 24), 5: byte(i >> 16), 6: byte(i >> 8), 15: byte(i)})
				ev.Prefix = netip.PrefixFrom(ev.IP, 64).Masked()
			}
			t := ev.Time.Add(time.Duration(i/len(events)) * 2 * time.Hour)
			m.Reset()
			eng.Prepare(ev, &m)
			trips = eng.Apply(t, m.Items, m.Keys, trips[:0])
			i++
		}
		cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
	})
}

// uniqueEvents returns copies of events whose paths and user agents are
// all distinct: the original ones with a number appended.
func uniqueEvents(events []characteristics.Event) []characteristics.Event {
	out := make([]characteristics.Event, len(events))
	for i := range events {
		out[i] = events[i].Clone()
		n := strconv.Itoa(i)
		out[i].Path += "/" + n
		out[i].UserAgent += " u" + n
	}
	return out
}

// TestLibraryAllocs holds the per-event path of the whole library at zero
// allocations once its tables have grown.
func TestLibraryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	events := loggentest.Events(t, 200)
	set, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Rules: set})
	if err != nil {
		t.Fatal(err)
	}
	var m engine.Matches
	var trips []engine.Trip
	i := 0
	op := func() {
		ev := &events[i%len(events)]
		m.Reset()
		eng.Prepare(ev, &m)
		trips = eng.Apply(ev.Time, m.Items, m.Keys, trips[:0])
		i++
	}
	for range len(events) { // one pass grows every table and buffer
		op()
	}
	if n := testing.AllocsPerRun(len(events), op); n != 0 {
		t.Errorf("%v allocs per event, want 0", n)
	}
}

// TestLibraryHostileAllocs holds rule evaluation at zero allocations when
// every event brings a path and a user agent never seen before.
func TestLibraryHostileAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	events := uniqueEvents(loggentest.Events(t, 200))
	set, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var m rules.Matches
	i := 0
	op := func() {
		set.Eval(&events[i%len(events)], &m)
		i++
	}
	for range 1000 { // the memo's tables, the events' normalisation buffers
		op()
	}
	if n := testing.AllocsPerRun(len(events)-1000, op); n != 0 {
		t.Errorf("%v allocs per event, want 0", n)
	}
}

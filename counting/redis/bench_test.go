package redis

import (
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
)

// BenchmarkAdd is the cost of a decision with fleet mode on: a key inside
// its lease, no network. BenchmarkTableAdd is the same with fleet mode off.
func BenchmarkAdd(b *testing.B) {
	clock := t0
	st := newFakeStore(clock)
	f, err := New(Config{Node: "a", Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "r", Limit: counting.Limit{Period: time.Minute, Requests: 1e12}})
	const keys = 1 << 16
	now := clock.UnixNano()
	for k := range uint64(keys) {
		c.Add(k, 1, now)
	}
	f.Flush(b.Context()) // grants
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		c.Add(i&(keys-1)*0x9e3779b97f4a7c15, 1, now)
		i++
	}
}

func BenchmarkTableAdd(b *testing.B) {
	t, _ := counting.NewTable(counting.Config{Limit: counting.Limit{Period: time.Minute, Requests: 1e12}})
	now := t0.UnixNano()
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		t.Add(i&(1<<16-1)*0x9e3779b97f4a7c15, 1, now)
		i++
	}
}

// BenchmarkFlushIdle is one flush when 100,000 keys hold leases and none
// was used since the last one: the flush loop's cost on a node with many
// quiet keys.
func BenchmarkFlushIdle(b *testing.B) {
	clock := t0
	st := newFakeStore(clock)
	f, err := New(Config{Node: "a", Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.GCRA, Period: time.Minute, Requests: 60, Burst: 10}})
	const keys = 100_000
	now := clock.UnixNano()
	for k := range uint64(keys) {
		c.Add(k*0x9e3779b97f4a7c15, 1, now)
	}
	f.Flush(b.Context()) // grants
	f.Flush(b.Context())
	b.ReportAllocs()
	for b.Loop() {
		f.Flush(b.Context())
	}
}

// BenchmarkFlushFull is the flush that looks at every key that is due,
// once a second (fullEvery intervals), with 100,000 quiet keys holding
// leases (of an hour's limit, so that none is forgotten while it runs).
func BenchmarkFlushFull(b *testing.B) {
	clock := t0
	st := newFakeStore(clock)
	f, err := New(Config{Node: "a", Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.GCRA, Period: time.Hour, Requests: 3600, Burst: 10}})
	const keys = 100_000
	now := clock.UnixNano()
	for k := range uint64(keys) {
		c.Add(k*0x9e3779b97f4a7c15, 1, now)
	}
	f.Flush(b.Context()) // grants
	b.ReportAllocs()
	for b.Loop() {
		clock = clock.Add(fullEvery * DefaultFlushInterval)
		f.Flush(b.Context())
	}
}

// BenchmarkAddMany is BenchmarkAdd over 200,000 keys in no particular
// order (more than the caches hold), beside BenchmarkTableAddMany: a
// decision's cost on a node that sees many clients.
func BenchmarkAddMany(b *testing.B) {
	clock := t0
	st := newFakeStore(clock)
	f, err := New(Config{Node: "a", Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "r", Limit: counting.Limit{Period: time.Minute, Requests: 1e12}})
	const keys = 200_000
	now := clock.UnixNano()
	for k := range uint64(keys) {
		c.Add(mix(k+1), 1, now)
	}
	f.Flush(b.Context()) // grants
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		c.Add(mix(i%keys+1), 1, now)
		i += 7919 // a prime: every key, in no cache-friendly order
	}
}

func BenchmarkTableAddMany(b *testing.B) {
	t, _ := counting.NewTable(counting.Config{Limit: counting.Limit{Period: time.Minute, Requests: 1e12}})
	now := t0.UnixNano()
	const keys = 200_000
	for k := range uint64(keys) {
		t.Add(mix(k+1), 1, now)
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		t.Add(mix(i%keys+1), 1, now)
		i += 7919
	}
}

// mix spreads the bits of a benchmark's key, as counting's tables do.
func mix(key uint64) uint64 {
	key ^= key >> 33
	key *= 0xff51afd7ed558ccd
	key ^= key >> 33
	return key
}

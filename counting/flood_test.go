package counting

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/guardd/guardd/cputime"
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFlood feeds 10 million random keys (an attacker rotating addresses)
// mixed with 100 heavy keys into a table capped at 100,000 keys: the cap
// holds, the heap stops growing once the shards are full, and every heavy
// key keeps an accurate count.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("10 million keys; skipped in -short")
	}
	const (
		maxKeys   = 100_000
		noise     = 10_000_000
		heavyKeys = 100
		every     = 10 // one heavy event per `every` noise events
	)
	before := heapAlloc()
	tab, err := NewTable(Config{Limit: Limit{Period: time.Hour, Requests: 1000}, MaxKeys: maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	heavy := make([]uint64, heavyKeys)
	for i := range heavy {
		heavy[i] = rng.Uint64()
	}
	sent := make([]float64, heavyKeys)
	// Event time moves 10 minutes over the run: one hour-long period, so a
	// heavy key's count is simply what it sent.
	now := t0
	var atMillion uint64
	start, cpu := time.Now(), cputime.Process()
	for i := range noise {
		now += int64(60 * time.Microsecond)
		tab.Add(rng.Uint64(), 1, now)
		if i%every == 0 {
			h := (i / every) % heavyKeys
			tab.Add(heavy[h], 1, now)
			sent[h]++
		}
		if i == 1_000_000 {
			atMillion = heapAlloc()
		}
	}
	elapsed, cpuUsed := time.Since(start), cputime.Since(cpu)
	after := heapAlloc()
	runtime.KeepAlive(tab)

	if n := tab.Len(); n > maxKeys {
		t.Errorf("Len() = %d, above the cap %d", n, maxKeys)
	}
	var worst, lost float64
	for i, k := range heavy {
		got := tab.Peek(k, now).Count
		diff := sent[i] - got
		lost += diff
		worst = max(worst, diff)
		// Counts never grow from eviction; a heavy key can lose at most the
		// first event or two, while its count still equals a noise key's.
		if diff < 0 || diff > 2 {
			t.Errorf("heavy key %d: count %v, sent %v", i, got, sent[i])
		}
	}
	grown := int64(after) - int64(before)
	growthAfterMillion := int64(after) - int64(atMillion)
	t.Logf("keys offered: %d noise + %d heavy (%v events each); cap %d", noise, heavyKeys, sent[0], maxKeys)
	adds := float64(noise + noise/every)
	t.Logf("Len %d, evictions %d, %.1f s wall, %.1f s CPU (%.2f M adds per CPU-second, key generation and two heap measurements included)",
		tab.Len(), tab.Evictions(), elapsed.Seconds(), cpuUsed.Seconds(), adds/cpuUsed.Seconds()/1e6)
	t.Logf("heavy keys: worst count error %v events, total %v of %v events", worst, lost, float64(noise/every))
	t.Logf("heap: +%.2f MiB for the table (%.1f B per capped key); +%d B between 1M and 10M keys", float64(grown)/(1<<20), float64(grown)/maxKeys, growthAfterMillion)
	if grown > maxKeys*64 {
		t.Errorf("heap grew by %d B, above 64 B per capped key", grown)
	}
	if growthAfterMillion > 1<<20 {
		t.Errorf("heap grew by %d B between 1M and 10M keys; it should be flat once shards are full", growthAfterMillion)
	}
}

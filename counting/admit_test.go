package counting

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAdmit: a refused Admit changes nothing, an admitted one is an Add,
// and the RetryAfter of a refusal is exact: a nanosecond earlier the same
// event is refused, at it admitted.
func TestAdmit(t *testing.T) {
	const start = int64(1_700_000_000) * int64(time.Second)
	for alg := SlidingWindow; alg < numAlgorithms; alg++ {
		t.Run(alg.String(), func(t *testing.T) {
			lim := Limit{Algorithm: alg, Period: time.Minute, Requests: 5}
			tab, _ := NewTable(Config{Limit: lim})
			var log []int64 // what tab admitted, to rebuild its state in a probe
			probeAt := func(at int64) Result {
				probe, _ := NewTable(Config{Limit: lim})
				for _, x := range log {
					probe.Add(7, 1, x)
				}
				return probe.Admit(7, 1, at)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			now := start
			admitted, refused, checked := 0, 0, 0
			for range 5000 {
				now += int64(rng.ExpFloat64() * float64(4*time.Second))
				before := tab.Peek(7, now)
				r := tab.Admit(7, 1, now)
				if r.Exceeded {
					refused++
					if after := tab.Peek(7, now); after.Count != before.Count {
						t.Fatalf("a refused Admit changed the count: %v -> %v", before.Count, after.Count)
					}
					if checked < 200 && r.RetryAfter > 1 {
						checked++
						// The sliding window's crossing falls inside a
						// nanosecond that RetryAfter rounds up.
						if p := probeAt(now + int64(r.RetryAfter) - 1); !p.Exceeded && alg != SlidingWindow {
							t.Fatalf("admitted a nanosecond before RetryAfter %v", r.RetryAfter)
						}
						if p := probeAt(now + int64(r.RetryAfter)); p.Exceeded {
							t.Fatalf("refused at RetryAfter %v: %+v", r.RetryAfter, p)
						}
					}
					continue
				}
				admitted++
				log = append(log, now)
			}
			if admitted == 0 || refused == 0 {
				t.Fatalf("admitted %d, refused %d: the traffic does not exercise the limit", admitted, refused)
			}
			if alg == SlidingLog { // exact: never more than 5 admitted in a minute
				for i := 5; i < len(log); i++ {
					if log[i]-log[i-5] < int64(time.Minute) {
						t.Fatalf("6 admitted within %v", time.Duration(log[i]-log[i-5]))
					}
				}
			}
		})
	}
}

package counting

import (
	"testing"
	"time"
)

// TestBurst: with Burst set, TokenBucket and GCRA admit Burst events at
// once and then one per Period/Requests, and say exactly when.
func TestBurst(t *testing.T) {
	for _, alg := range []Algorithm{TokenBucket, GCRA} {
		for _, burst := range []float64{1, 3, 25} {
			t.Run(alg.String(), func(t *testing.T) {
				tb, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Minute, Requests: 10, Burst: burst}})
				if err != nil {
					t.Fatal(err)
				}
				const t0 = int64(1_700_000_000) * int64(time.Second)
				if r := tb.Peek(1, t0); r.Remaining != burst {
					t.Errorf("unused key: remaining %v, want %v", r.Remaining, burst)
				}
				for i := range int(burst) {
					if r := tb.Add(1, 1, t0); r.Exceeded || r.Remaining != burst-float64(i+1) {
						t.Fatalf("event %d of the burst: %+v", i+1, r)
					}
				}
				r := tb.Add(1, 1, t0)
				if !r.Exceeded || r.RetryAfter != 6*time.Second {
					t.Fatalf("event after the burst: %+v, want exceeded, retry 6s", r)
				}
				if r := tb.Add(1, 1, t0+int64(r.RetryAfter)-1); !r.Exceeded {
					t.Fatalf("a nanosecond early: admitted")
				}
				if r := tb.Add(1, 1, t0+int64(r.RetryAfter)); r.Exceeded {
					t.Fatalf("at Retry-After: %+v", r)
				}
			})
		}
	}
	if _, err := NewTable(Config{Limit: Limit{Algorithm: SlidingWindow, Period: time.Minute, Requests: 10, Burst: 3}}); err == nil {
		t.Error("burst accepted for sliding_window")
	}
}

package counting

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The accuracy test repeats Cloudflare's comparison ("How we built rate
// limiting capable of scaling to millions of domains", 2017) on synthetic
// traffic: every event goes through the sliding window counter and through
// an exact sliding log, and the two decisions and rates are compared.

type event struct {
	at  int64
	key uint64
}

type trafficShape struct {
	name      string
	keys      int
	periods   int     // length of the run
	rateLo    float64 // steady keys: rate drawn in [rateLo, rateHi] x limit
	rateHi    float64
	abusive   float64 // share of keys drawn in [abuseLo, abuseHi] x limit instead
	abuseLo   float64
	abuseHi   float64
	bursty    float64 // share of keys that send on/off bursts
	burstRate float64 // x limit, during a burst lasting a fifth of a period
}

// traffic draws Poisson arrivals per key (exponential gaps), or on/off
// bursts, and returns them in time order.
func traffic(sh trafficShape, lim Limit, seed uint64) []event {
	rng := rand.New(rand.NewPCG(seed, 99))
	p := float64(lim.Period)
	end := t0 + int64(sh.periods)*int64(lim.Period)
	var evs []event
	for k := range sh.keys {
		key := uint64(k)*0x9e3779b97f4a7c15 + 1
		x := sh.rateLo + rng.Float64()*(sh.rateHi-sh.rateLo)
		if rng.Float64() < sh.abusive {
			x = sh.abuseLo + rng.Float64()*(sh.abuseHi-sh.abuseLo)
		}
		gap := p / (x * lim.Requests) // mean nanoseconds between events
		at := float64(t0) + rng.ExpFloat64()*gap
		if rng.Float64() < sh.bursty {
			// Bursts of a fifth of a period at burstRate x limit, every
			// two periods on average.
			bgap := p / (sh.burstRate * lim.Requests)
			for at < float64(end) {
				stop := at + p/5
				for ; at < stop && at < float64(end); at += rng.ExpFloat64() * bgap {
					evs = append(evs, event{int64(at), key})
				}
				at += rng.ExpFloat64() * 2 * p
			}
			continue
		}
		for ; at < float64(end); at += rng.ExpFloat64() * gap {
			evs = append(evs, event{int64(at), key})
		}
	}
	slices.SortFunc(evs, func(a, b event) int {
		if a.at != b.at {
			return int(min(max(a.at-b.at, -1), 1))
		}
		return int(min(max(int64(a.key)-int64(b.key), -1), 1))
	})
	return evs
}

// exactLog is the reference: every event time of every key, no cap.
type exactLog map[uint64][]int64

func (l exactLog) add(key uint64, at int64, period int64) float64 {
	q := append(l[key], at)
	i := 0
	for i < len(q) && q[i] <= at-period {
		i++
	}
	q = q[i:]
	l[key] = q
	return float64(len(q))
}

type accuracy struct {
	requests        int
	exactLimited    int
	wronglyAllowed  int
	wronglyLimited  int
	sumRelErr       float64 // |estimate-exact|/exact, summed over requests
	maxRelErr       float64
	estimateIsLower int
}

func measure(t *testing.T, lim Limit, evs []event) accuracy {
	t.Helper()
	tab, err := NewTable(Config{Limit: lim, MaxKeys: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ref := exactLog{}
	var a accuracy
	for _, ev := range evs {
		exact := ref.add(ev.key, ev.at, int64(lim.Period))
		r := tab.Add(ev.key, 1, ev.at)
		limited := exact > lim.Requests
		a.requests++
		if limited {
			a.exactLimited++
		}
		switch {
		case limited && !r.Exceeded:
			a.wronglyAllowed++
		case !limited && r.Exceeded:
			a.wronglyLimited++
		}
		e := math.Abs(r.Count-exact) / exact
		a.sumRelErr += e
		a.maxRelErr = max(a.maxRelErr, e)
		if r.Count < exact {
			a.estimateIsLower++
		}
	}
	return a
}

func pct(n, of int) float64 { return 100 * float64(n) / float64(of) }

func TestAccuracy(t *testing.T) {
	lim := Limit{Period: time.Minute, Requests: 20}
	for _, tc := range []struct {
		shape trafficShape
		// bounds asserted on the sliding window counter, in percent of
		// requests: about twice what the seeded traffic gives
		maxWrongAllowed, maxWrongLimited, maxAvgRelErr float64
	}{
		{
			// Most clients far below the limit, a few abusers well above.
			// The abusers send 40% of the requests, so this is still much
			// harder than the traffic Cloudflare measured.
			shape:           trafficShape{name: "mixed", keys: 5000, periods: 10, rateLo: 0.02, rateHi: 0.5, abusive: 0.03, abuseLo: 2, abuseHi: 10, bursty: 0.05, burstRate: 10},
			maxWrongAllowed: 0.2, maxWrongLimited: 1, maxAvgRelErr: 15,
		},
		{
			// Every client between half and twice the limit: the worst case
			// for any approximation, since most decisions are close calls.
			shape:           trafficShape{name: "near limit", keys: 2000, periods: 10, rateLo: 0.5, rateHi: 2, bursty: 0.2, burstRate: 5},
			maxWrongAllowed: 4, maxWrongLimited: 6, maxAvgRelErr: 15,
		},
	} {
		t.Run(tc.shape.name, func(t *testing.T) {
			evs := traffic(tc.shape, lim, 1)
			a := measure(t, lim, evs)
			wa, wl := pct(a.wronglyAllowed, a.requests), pct(a.wronglyLimited, a.requests)
			avg := 100 * a.sumRelErr / float64(a.requests)
			t.Logf("%-10s %d keys, %d requests, %.2f%% limited by the exact log", tc.shape.name, tc.shape.keys, a.requests, pct(a.exactLimited, a.requests))
			t.Logf("%-10s sliding window: wrongly allowed %.4f%%, wrongly limited %.4f%%, wrong decisions %.4f%%", tc.shape.name, wa, wl, wa+wl)
			t.Logf("%-10s sliding window: rate error avg %.2f%%, max %.1f%%, estimate under exact for %.1f%% of requests", tc.shape.name, avg, 100*a.maxRelErr, pct(a.estimateIsLower, a.requests))
			if wa > tc.maxWrongAllowed || wl > tc.maxWrongLimited || avg > tc.maxAvgRelErr {
				t.Errorf("outside bounds: allowed %.4f%% (max %v), limited %.4f%% (max %v), avg error %.2f%% (max %v)",
					wa, tc.maxWrongAllowed, wl, tc.maxWrongLimited, avg, tc.maxAvgRelErr)
			}
			// The capped sliding log must agree with the uncapped one on
			// every decision.
			logLim := lim
			logLim.Algorithm = SlidingLog
			if b := measure(t, logLim, evs); b.wronglyAllowed+b.wronglyLimited != 0 {
				t.Errorf("sliding log: %d wrongly allowed, %d wrongly limited; want 0", b.wronglyAllowed, b.wronglyLimited)
			}
			if a.wronglyAllowed+a.wronglyLimited == 0 {
				t.Errorf("sliding window made no wrong decision: the traffic does not exercise it")
			}
		})
	}
}

//go:build integration

package redis

import (
	"fmt"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis/redistest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// evenRuns is how many independent runs TestEvenTrafficAdmitsExactly
// makes per algorithm: one run that admits the limit proves little (the
// issue that asked for this saw 99 of 100 in one run, 100 in the next).
const evenRuns = 20

// TestEvenTrafficAdmitsExactly: three nodes share a limit of 100; a
// client's requests come to them in turn (a round-robin balancer), one
// every evenGap, on real Redis. Every run, a fresh key, must admit exactly
// the limit: not one more (no node admits beyond a lease while its view of
// the key may be stale) and not one less (no part of the budget is left
// stranded in a lease no node can spend).
func TestEvenTrafficAdmitsExactly(t *testing.T) {
	srv := redistest.Start(t, 0)
	const limit = 100
	for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.FixedWindow, counting.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			rule := Rule{Name: "even" + alg.String(), Limit: counting.Limit{Algorithm: alg, Period: time.Hour, Requests: limit}}
			nodes := startNodes(t, Options{Addresses: []string{srv.Addr}}, rule, 3, Config{})
			var wrong []string
			for run := range evenRuns {
				got, sent, waits := roundRobin(nodes, uint64(run+1), limit)
				if got != limit {
					wrong = append(wrong, fmt.Sprintf("run %d: %d", run, got))
				}
				t.Logf("run %d: admitted %d of %d (%v lease waits)", run, got, sent, waits)
			}
			if len(wrong) > 0 {
				t.Errorf("admitted other than the limit %d in %d of %d runs: %v", limit, len(wrong), evenRuns, wrong)
			}
		})
	}
}

// evenGap paces roundRobin: about 17 events per node per flush interval,
// the budget of 100 spent over about 6 flush intervals.
const evenGap = time.Millisecond

// roundRobin sends key's requests to nodes in turn, one per evenGap, until
// every node has refused 10 in a row on its fleet view (not while waiting
// for a grant), and at least 3*limit; it returns how many were admitted,
// sent, and refused while waiting for a grant.
func roundRobin(nodes []*node, key uint64, limit int) (got, sent int, waits float64) {
	refused := make([]int, len(nodes))
	done := func() bool {
		for _, r := range refused {
			if r < 10 {
				return false
			}
		}
		return true
	}
	var lw0 float64
	for _, nd := range nodes {
		lw0 += testutil.ToFloat64(nd.c.decisions[byLeaseWait])
	}
	start := time.Now()
	for i := 0; i < 20*limit && (i < 3*limit || !done()); i++ {
		nd := nodes[i%len(nodes)]
		w := testutil.ToFloat64(nd.c.decisions[byLeaseWait])
		switch {
		case !nd.c.Add(key, 1, time.Now().UnixNano()).Exceeded:
			got++
			refused[i%len(nodes)] = 0
		case testutil.ToFloat64(nd.c.decisions[byLeaseWait]) == w:
			refused[i%len(nodes)]++
		default:
			refused[i%len(nodes)] = 0 // waiting for a grant
		}
		sent++
		// Pacing, not synchronisation: one request per evenGap.
		if d := time.Duration(i+1)*evenGap - time.Since(start); d > 0 {
			time.Sleep(d)
		}
	}
	for _, nd := range nodes {
		waits += testutil.ToFloat64(nd.c.decisions[byLeaseWait])
	}
	return got, sent, waits - lw0
}

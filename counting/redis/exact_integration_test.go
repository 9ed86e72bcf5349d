//go:build integration

package redis

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
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
			// -short (the -race pass, on a loaded machine) allows the
			// documented bound, one event per node either way: a flush
			// loop stalled for tens of milliseconds leaves a view that
			// stale. The accuracy is this test's plain pass.
			slack := 0
			if testing.Short() {
				slack = len(nodes)
			}
			var wrong []string
			for run := range evenRuns {
				got, sent, waits := roundRobin(nodes, uint64(run+1), limit)
				if got < limit-slack || got > limit+slack {
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

// TestSkewedTrafficSpendsTheBudget: bench/fleet.sh's accuracy shape on a
// smaller scale. Three nodes see 20 keys' traffic 90/5/5 (3,000 requests
// per key over two seconds against a limit of 1,000 an hour). Grants are
// paced by the fleet's rate, so the quiet nodes hold little of a key's
// budget when the busy node has spent the rest: the fleet admits at most
// 5% less than the limit (without pacing, a node that saw 5% of the
// traffic sat on a third of the headroom: 2-18% less in bench/fleet.sh,
// a third of it here, where each key's first request is a quiet node's).
func TestSkewedTrafficSpendsTheBudget(t *testing.T) {
	srv := redistest.Start(t, 0)
	for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			const keys, limit, per = 20, 1000, 3000
			rule := Rule{Name: "skew" + alg.String(), Limit: counting.Limit{Algorithm: alg, Period: time.Hour, Requests: limit}}
			nodes := startNodes(t, Options{Addresses: []string{srv.Addr}}, rule, 3, Config{})
			share := [3]float64{.9, .05, .05}
			admitted := make([][3]int, keys)
			// Every key's first request comes to a quiet node, just before
			// the streams start, so that its first script is the key's:
			// a grant of a third of the headroom would sit in its lease.
			for k := range keys {
				if !nodes[1].c.Add(uint64(k+1), 1, time.Now().UnixNano()).Exceeded {
					admitted[k][1]++
				}
			}
			var wg sync.WaitGroup
			for ni, nd := range nodes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := int(keys * per * share[ni])
					gap := 2 * time.Second / time.Duration(n)
					start := time.Now()
					for i := range n {
						k := i % keys
						if !nd.c.Add(uint64(k+1), 1, time.Now().UnixNano()).Exceeded {
							admitted[k][ni]++
						}
						if i%64 == 63 {
							// Pacing, not synchronisation.
							if d := time.Duration(i+1)*gap - time.Since(start); d > 0 {
								time.Sleep(d)
							}
						}
					}
				}()
			}
			wg.Wait()
			var over, under, sum int
			for _, a := range admitted {
				got := a[0] + a[1] + a[2]
				sum += got
				over += max(0, got-limit)
				under += max(0, limit-got)
			}
			exact := keys * limit
			t.Logf("%s 90/5/5: admitted %d, exact %d: over %.2f%%, under %.2f%%", alg, sum, exact, 100*float64(over)/float64(exact), 100*float64(under)/float64(exact))
			if float64(under) > 0.05*float64(exact) && !testing.Short() {
				t.Errorf("under-admission %.2f%% with 90/5/5 traffic, want at most 5%%", 100*float64(under)/float64(exact))
			}
			if float64(over) > 0.01*float64(exact)+3*keys {
				t.Errorf("over-admission %.2f%%, want at most 1%% (+3 events a key)", 100*float64(over)/float64(exact))
			}
		})
	}
}

// TestScriptsPaceAsModel: the scripts pace grants as params.step does, on
// a real redis-server: a key's first call gets what it asks for, and asks
// made microseconds after a burst of 200 events are cut to the asker's
// pace (below its share), the same in Redis as in the model.
func TestScriptsPaceAsModel(t *testing.T) {
	srv := redistest.Start(t, 0)
	c := dial(t, Options{Addresses: []string{srv.Addr}})
	for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.FixedWindow, counting.TokenBucket, counting.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			r := Rule{Name: "pace" + alg.String(), Limit: counting.Limit{Algorithm: alg, Period: time.Hour, Requests: 1000}}
			p, err := newParams(r)
			if err != nil {
				t.Fatal(err)
			}
			key := "guardd:{" + r.Name + ":1}"
			const fl = 50_000
			var model State
			var est estimate
			paced := false
			for i, a := range []call{
				{delta: 1, want: 2, nodes: 3, flush: fl},
				{delta: 200, nodes: 3, flush: fl},
				{delta: 1, want: 3, nodes: 3, flush: fl},
				{delta: 1, want: 400, nodes: 3, flush: fl},
			} {
				st, errs := make([]State, 1), make([]error, 1)
				op := Op{Alg: alg, Key: key, Delta: a.delta, Want: a.want, Nodes: a.nodes, Flush: a.flush,
					Period: p.period, Limit: p.limit, Burst: p.burst, Member: "m"}
				if err := c.Apply(context.Background(), []Op{op}, st, errs); err != nil {
					t.Fatal(err)
				}
				got := st[0]
				before := model
				model, est = p.step(model, est, a, got.Now)
				if math.Abs(got.Grant-model.Grant) > 1e-9 {
					t.Fatalf("step %d %+v: redis granted %v, model %v", i, a, got.Grant, model.Grant)
				}
				h := p.capacity() - p.usage(p.advance(before, got.Now), got.Now) - a.delta
				if unpaced := share(h, p.capacity(), 0, a.want, a.nodes); a.want > 0 && got.Grant < unpaced {
					paced = true
				}
				t.Logf("step %d: granted %v", i, got.Grant)
				model = got
				v1, _ := srv.Cmd("HGET", key, "ef")
				v2, _ := srv.Cmd("HGET", key, "en")
				f, _ := strconv.ParseFloat(v1, 64)
				est.since = int64(f)
				est.n, _ = strconv.ParseFloat(v2, 64)
			}
			if !paced {
				t.Error("no grant was paced below the share")
			}
		})
	}
}

package mitigation

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemoryPerMitigation reports the live heap an active mitigation
// costs: the heap of a store holding n mitigations, less the heap of the same
// store empty, over n. The scopes are what rules make most (one ip.src, with
// a rule name from a small set); the store is in memory, or journaled to a
// state directory. The change feed is full (n is more than Config.History),
// as it is in a daemon that has been busy.
func BenchmarkMemoryPerMitigation(b *testing.B) {
	for _, n := range []int{100_000} {
		for _, dir := range []string{"", "journal"} {
			b.Run(fmt.Sprintf("entries=%d/state=%s", n, cmpOr(dir, "memory")), func(b *testing.B) {
				rules := []string{"login_bruteforce", "scanner_ua", "credential_stuffing", "api_abuse"}
				var perEntry float64
				for b.Loop() {
					b.StopTimer()
					cfg := Config{Now: func() time.Time { return t0 }}
					if dir != "" {
						cfg.StateDir = b.TempDir()
					}
					s, err := New(cfg, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					before := liveHeap()
					b.StartTimer()
					for i := range n {
						a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
						m := Mitigation{Rule: rules[i%len(rules)], Action: ActionBlock,
							Scope: Scope{{Name: "ip.src", Value: a.String()}}, Expires: t0.Add(time.Hour + time.Duration(i)*time.Millisecond)}
						if _, ok, err := s.Add(m, t0); err != nil || !ok {
							b.Fatal(ok, err)
						}
					}
					b.StopTimer()
					after := liveHeap()
					if s.Len() != n {
						b.Fatalf("%d held, want %d", s.Len(), n)
					}
					perEntry = float64(int64(after)-int64(before)) / float64(n)
					runtime.KeepAlive(s)
					s.Close()
					b.StartTimer()
				}
				b.ReportMetric(perEntry, "bytes/mitigation")
			})
		}
	}
}

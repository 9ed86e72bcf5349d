package crowdsec

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/guardd/guardd/cputime"
	"github.com/guardd/guardd/mitigation"
)

func benchEnv(b *testing.B, n int) (*env, string) {
	e := newEnv(b, 0, Config{})
	k := e.key("bench")
	for i := range n {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		e.add(fmt.Sprintf("rule-%d", i%16), mitigation.ActionBlock, "ip.src", a.String(), time.Hour)
	}
	e.srv.Len() // build the view outside the timed loop
	return e, k
}

// BenchmarkStreamStartup is a bouncer's first pull of every active
// decision: the target is under one second for 100,000.
func BenchmarkStreamStartup(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("decisions=%d", n), func(b *testing.B) {
			e, k := benchEnv(b, n)
			r := httptest.NewRequest("GET", "/v1/decisions/stream?startup=true", nil)
			r.Header.Set("X-Api-Key", k)
			b.ReportAllocs()
			var size int
			cpu0 := cputime.Process()
			for b.Loop() {
				w := httptest.NewRecorder()
				e.srv.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
				size = w.Body.Len()
			}
			// CPU time of the whole process (GC included) per answer: on a
			// shared machine, wall time per op also counts waiting for a core.
			cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(size), "body-bytes")
		})
	}
}

// BenchmarkStreamPoll is a later poll with one change among n decisions.
func BenchmarkStreamPoll(b *testing.B) {
	e, k := benchEnv(b, 100_000)
	r := httptest.NewRequest("GET", "/v1/decisions/stream?startup=true", nil)
	r.Header.Set("X-Api-Key", k)
	e.srv.ServeHTTP(httptest.NewRecorder(), r)
	r = httptest.NewRequest("GET", "/v1/decisions/stream?startup=false", nil)
	r.Header.Set("X-Api-Key", k)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		e.add("poll", mitigation.ActionBlock, "ip.src", netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}).String(), time.Hour)
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkQuery is a live-mode bouncer's per-address question, with
// 100,000 decisions and ranges of three lengths in use.
func BenchmarkQuery(b *testing.B) {
	e, k := benchEnv(b, 100_000)
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "198.51.0.0/16", time.Hour)
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "198.0.0.0/8", time.Hour)
	r := httptest.NewRequest("GET", "/v1/decisions?ip=198.51.100.7", nil)
	r.Header.Set("X-Api-Key", k)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

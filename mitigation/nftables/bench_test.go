package nftables

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

)

// Kernel benchmarks need root, like the kernel tests; see bench/nftables.md.

// benchAddr is the i-th of the benchmark's distinct IPv4 addresses.
func benchAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

// benchPrefix is the i-th of the benchmark's /28s, spaced so that none are
// adjacent (adjacent ones of one expiry would merge).
func benchPrefix(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(11 + i>>19), byte(i >> 11), byte(i >> 3), byte(i&7) << 5}), 28)
}

// BenchmarkBatch sends one batch of n elements: the cost per batch, and the
// size at which the kernel refuses a batch ("message too long").
func BenchmarkBatch(b *testing.B) {
	for _, n := range []int{1024, 4096, 8192, 16384, 32768, 50000} {
		for _, kind := range []setKind{setV4, setV4Net} {
			b.Run(fmt.Sprintf("set=%s/elements=%d", setNames[kind], n), func(b *testing.B) {
				requireKernel(b)
				ns := newNetNS(b)
				cfg, _ := Config{NetNSFd: ns.fd}.withDefaults()
				k := newKernel(cfg)
				if _, err := k.ensure(); err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				exp := ceilSecond(now.Add(time.Hour))
				var ops []op
				for i := 0; len(ops) < n; i++ {
					if kind == setV4 {
						ops = append(ops, op{kind: opAdd, set: kind, s: span{lo: benchAddr(i)}, e: elem{exp: exp}})
					} else {
						p := benchPrefix(i)
						ops = append(ops, op{kind: opAdd, set: kind, s: span{p.Addr(), lastAddr(p).Next()}, e: elem{exp: exp}})
					}
				}
				if kind == setV4Net {
					ops = ops[:n/2] // two elements each
				}
				for b.Loop() {
					b.StopTimer()
					ns.run(b, "nft", "flush", "set", "inet", "guardd", setNames[kind])
					b.StartTimer()
					if err := k.send(ops, now); err != nil {
						b.Skipf("%d elements in one batch: %v", n, err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/element")
			})
		}
	}
}

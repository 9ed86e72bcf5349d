package loggen_test

import (
	"io"
	"net/netip"
	"strconv"
	"testing"

	"github.com/guardd/guardd/bench/loggen"
)

// TestNetworks checks the networks GeoDB writes: every prefix masked, no
// two overlapping (an address in two records gets whichever ASN the
// database keeps, so per-ASN rules would see one network where the labels
// mean two), and every benign IPv6 client of the generator's range in a
// benign ISP's network, never the attackers'.
func TestNetworks(t *testing.T) {
	labels, err := loggen.Generate(io.Discard, loggen.Config{Seed: 14, Benign: 600})
	if err != nil {
		t.Fatal(err)
	}
	nets := labels.Networks
	for i, a := range nets {
		if a.Prefix != a.Prefix.Masked() {
			t.Errorf("network %v (%s) is not masked", a.Prefix, a.Org)
		}
		for _, b := range nets[i+1:] {
			if a.Prefix.Overlaps(b.Prefix) {
				t.Errorf("networks %v (%s, AS%d) and %v (%s, AS%d) overlap", a.Prefix, a.Org, a.ASN, b.Prefix, b.Org, b.ASN)
			}
		}
	}
	docV6 := netip.MustParsePrefix("2001:db8::/32")
	asns := map[uint32]int{}
	n := 0
	for s := range labels.BenignIPs {
		ip := netip.MustParseAddr(s)
		if !docV6.Contains(ip) {
			continue
		}
		n++
		var asn uint32
		for _, nw := range nets {
			if nw.Prefix.Contains(ip) {
				asn = nw.ASN
				break
			}
		}
		if asn == 0 || !labels.BenignASNs[strconv.FormatUint(uint64(asn), 10)] {
			t.Errorf("benign %s (%s) is in AS%d, not a benign ISP's", ip, labels.Actors[s], asn)
			continue
		}
		asns[asn]++
	}
	if n == 0 {
		t.Fatal("no benign IPv6 clients in 2001:db8::/32")
	}
	if len(asns) < 10 {
		t.Errorf("%d benign IPv6 clients spread over %d ASNs, want the 20 ISPs'", n, len(asns))
	}
}

package nftables

import (
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// setKind names one of the four sets.
type setKind uint8

const (
	setV4    setKind = iota // single IPv4 addresses
	setV6                   // single IPv6 addresses
	setV4Net                // IPv4 ranges
	setV6Net                // IPv6 ranges
	numSets
)

var setNames = [numSets]string{setV4: "v4", setV6: "v6", setV4Net: "v4net", setV6Net: "v6net"}

// family and kind are the metric labels of a set.
func (k setKind) family() string {
	if k == setV4 || k == setV4Net {
		return "ipv4"
	}
	return "ipv6"
}

func (k setKind) kind() string {
	if k == setV4 || k == setV6 {
		return "address"
	}
	return "prefix"
}

func (k setKind) interval() bool { return k == setV4Net || k == setV6Net }

// span is one set element: an address (hi invalid) in an address set, or the
// range [lo, hi) in an interval set, where an invalid hi means "to the last
// address of the family".
type span struct{ lo, hi netip.Addr }

// elem is what a set holds for a span.
type elem struct {
	exp   time.Time // absolute expiry, whole seconds
	noEnd bool      // read from the kernel: a range start not followed by an end element
}

// state is the content of the four sets.
type state [numSets]map[span]elem

func newState() state {
	var s state
	for i := range s {
		s[i] = make(map[span]elem)
	}
	return s
}

// target is what one pushable mitigation asks for: an address or a prefix.
type target struct {
	set  setKind // setV4 or setV6 for an address, setV4Net or setV6Net for a prefix
	addr netip.Addr
	pfx  netip.Prefix
	exp  time.Time
}

// classify returns the target of m under cfg, or false when m is not pushed:
// another action, a scope other than one ip.src or ip.src.prefix pair, or a
// value that does not parse (the store canonicalises, so that is not
// expected). A single IPv6 address is widened to cfg.IPv6Bits unless the
// wider prefix would overlap cfg.Allowlist.
func classify(m mitigation.Mitigation, cfg Config) (target, bool) {
	if len(m.Scope) != 1 || !slices.Contains(cfg.Actions, m.Action) {
		return target{}, false
	}
	n, ok := mitigation.Network(m.Scope[0])
	if !ok {
		return target{}, false
	}
	t := target{exp: ceilSecond(m.Expires)}
	if a := n.Addr(); n.IsSingleIP() && m.Scope[0].Name == "ip.src" {
		switch {
		case a.Is4():
			t.set, t.addr = setV4, a
		case cfg.IPv6Bits < 128 && !allowed(cfg.Allowlist, netip.PrefixFrom(a, cfg.IPv6Bits).Masked()):
			t.set, t.pfx = setV6Net, netip.PrefixFrom(a, cfg.IPv6Bits).Masked()
		default:
			t.set, t.addr = setV6, a
		}
		return t, true
	}
	t.pfx = n
	t.set = setV6Net
	if n.Addr().Is4() {
		t.set = setV4Net
	}
	return t, true
}

// allowed reports whether p overlaps a prefix of the allowlist.
func allowed(allow []netip.Prefix, p netip.Prefix) bool {
	for _, a := range allow {
		if a.Overlaps(p) {
			return true
		}
	}
	return false
}

// ceilSecond rounds t up to a whole second: element timeouts are whole
// seconds, so adjacent ranges of one rule merge and a re-read timeout
// compares equal.
func ceilSecond(t time.Time) time.Time {
	r := t.Truncate(time.Second)
	if r.Before(t) {
		r = r.Add(time.Second)
	}
	return r
}

// desired computes the sets that enforce targets at now: the latest expiry
// per address, prefixes flattened into disjoint ranges (flatten), and
// addresses dropped when a range covers them at least as long.
func desired(targets map[uint64]target, now time.Time) state {
	var count [numSets]int
	for _, t := range targets {
		count[t.set]++
	}
	var st state
	for i := range st {
		st[i] = make(map[span]elem, count[i])
	}
	nets := [2][]ranged{make([]ranged, 0, count[setV4Net]), make([]ranged, 0, count[setV6Net])}
	for _, t := range targets {
		if !t.exp.After(now) {
			continue
		}
		switch t.set {
		case setV4, setV6:
			s := span{lo: t.addr}
			if e, ok := st[t.set][s]; !ok || t.exp.After(e.exp) {
				st[t.set][s] = elem{exp: t.exp}
			}
		default:
			i := t.set - setV4Net
			nets[i] = append(nets[i], ranged{lo: t.pfx.Addr(), hi: lastAddr(t.pfx).Next(), exp: t.exp})
		}
	}
	for i, in := range nets {
		rs := flatten(in)
		netSet, addrSet := setV4Net+setKind(i), setV4+setKind(i)
		for _, r := range rs {
			st[netSet][span{r.lo, r.hi}] = elem{exp: r.exp}
		}
		if len(rs) == 0 {
			continue
		}
		for s, e := range st[addrSet] {
			j := sort.Search(len(rs), func(j int) bool { return s.lo.Less(rs[j].lo) }) - 1
			if j >= 0 && before(s.lo, rs[j].hi) && !rs[j].exp.Before(e.exp) {
				delete(st[addrSet], s)
			}
		}
	}
	return st
}

// ranged is a range [lo, hi) with an expiry; an invalid hi is the end of the
// address space.
type ranged struct {
	lo, hi netip.Addr
	exp    time.Time
}

// before reports a < b where an invalid address is past every valid one.
func before(a, b netip.Addr) bool {
	if !b.IsValid() {
		return a.IsValid()
	}
	return a.IsValid() && a.Less(b)
}

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// flatten turns CIDR ranges, which either nest or are disjoint, into sorted
// disjoint ranges where each address keeps the latest expiry of the ranges
// covering it, merging neighbours of equal expiry. A range nested in one that
// lasts at least as long disappears; one that lasts longer splits its parent.
func flatten(in []ranged) []ranged {
	slices.SortFunc(in, func(a, b ranged) int {
		switch {
		case a.lo != b.lo:
			return a.lo.Compare(b.lo)
		case a.hi == b.hi:
			return b.exp.Compare(a.exp) // longest first: the rest are covered
		case before(b.hi, a.hi):
			return -1 // outer first
		default:
			return 1
		}
	})
	var out []ranged
	emit := func(lo, hi netip.Addr, exp time.Time) {
		if !before(lo, hi) {
			return
		}
		if n := len(out); n > 0 && out[n-1].hi == lo && out[n-1].exp.Equal(exp) {
			out[n-1].hi = hi
			return
		}
		out = append(out, ranged{lo, hi, exp})
	}
	var stack []ranged // open ranges, each nested in the one below, with rising expiry
	var pos netip.Addr // start of what is not yet emitted
	for _, r := range in {
		for len(stack) > 0 && !before(r.lo, stack[len(stack)-1].hi) {
			top := stack[len(stack)-1]
			emit(pos, top.hi, top.exp)
			pos = top.hi
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if !r.exp.After(top.exp) {
				continue
			}
			emit(pos, r.lo, top.exp)
		}
		pos = r.lo
		stack = append(stack, r)
	}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		emit(pos, top.hi, top.exp)
		pos = top.hi
		stack = stack[:len(stack)-1]
	}
	return out
}

package blocklist

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// Store is what the feeds read from mitigation.Store.
type Store interface {
	Snapshot(now time.Time) ([]mitigation.Mitigation, uint64)
	Changes(since uint64) (added, deleted []mitigation.Mitigation, cursor uint64, ok bool)
}

// actionSet is the set of actions a list holds.
type actionSet [8]bool

// parseActions reads action names; none means block and firewall, the
// actions that refuse a client outright (a firewall turning rate_limit or
// shadowban into a drop would change what they mean).
func parseActions(names []string) (actionSet, error) {
	var s actionSet
	if len(names) == 0 {
		s[mitigation.ActionBlock], s[mitigation.ActionFirewall] = true, true
		return s, nil
	}
	for i, n := range names {
		a, err := mitigation.ParseAction(n)
		if err != nil {
			return s, fmt.Errorf("actions[%d]: %w", i, err)
		}
		s[a] = true
	}
	return s, nil
}

// prefixes returns the networks of the mitigations whose action is in acts
// and whose scope is one ip.src or ip.src.prefix pair: unmapped, masked,
// sorted (IPv4 first, then by address, wider first), without duplicates and
// without networks inside another listed one.
func prefixes(ms []mitigation.Mitigation, acts actionSet) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ms))
	for i := range ms {
		m := &ms[i]
		if len(m.Scope) != 1 || int(m.Action) >= len(acts) || !acts[m.Action] {
			continue
		}
		if p, ok := mitigation.Network(m.Scope[0]); ok {
			out = append(out, p)
		}
	}
	return collapse(out)
}

// collapse sorts ps and drops duplicates and networks inside another.
func collapse(ps []netip.Prefix) []netip.Prefix {
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Bits(), b.Bits())
	})
	out := ps[:0]
	for _, p := range ps {
		// Sorted by address then width, a network holding p is the last
		// one kept, if any: an earlier one holding p would hold that one.
		if n := len(out); n > 0 {
			last := out[n-1]
			if last.Addr().BitLen() == p.Addr().BitLen() && last.Bits() <= p.Bits() && last.Contains(p.Addr()) {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// appendPrefix writes p as firewalls import it: a bare address for a host,
// CIDR otherwise.
func appendPrefix(b []byte, p netip.Prefix) []byte {
	b = p.Addr().AppendTo(b)
	if p.Bits() != p.Addr().BitLen() {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(p.Bits()), 10)
	}
	return b
}

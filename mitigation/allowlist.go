package mitigation

import (
	"fmt"
	"net/netip"
)

// Allowlist holds what is never mitigated: networks, matched against ip.src and
// ip.src.prefix scope values, and exact characteristic values (for example
// {http.headers["x-monitor"], "probe-7"} or {tls.ja4, ...}). Values named
// ip.src or ip.src.prefix are treated as networks.
//
// A scope is allowed, and Add refuses it, when any of its pairs is allowed: an
// address inside a listed network, a prefix that overlaps one (mitigating
// 192.0.2.0/24 would hit an allowlisted 192.0.2.7, and a firewall cannot make
// the exception), or a value equal to a listed one. IPv4-mapped IPv6 forms on
// either side are compared as IPv4.
type Allowlist struct {
	Prefixes []netip.Prefix
	Values   []Pair
}

// Allows reports whether s must never be mitigated.
func (a Allowlist) Allows(s Scope) bool {
	for _, p := range s {
		switch p.Name {
		case nameIP:
			addr, err := netip.ParseAddr(p.Value)
			if err != nil {
				break
			}
			addr = addr.Unmap().WithZone("")
			if a.matchNet(func(n netip.Prefix) bool { return n.Contains(addr) }) {
				return true
			}
		case namePrefix:
			pfx, err := netip.ParsePrefix(p.Value)
			if err != nil {
				break
			}
			pfx = unmapPrefix(pfx)
			if a.matchNet(pfx.Overlaps) {
				return true
			}
		}
		for _, v := range a.Values {
			if v == p {
				return true
			}
		}
	}
	return false
}

// matchNet reports whether f holds for any listed network, including ip.src
// and ip.src.prefix values.
func (a Allowlist) matchNet(f func(netip.Prefix) bool) bool {
	for _, n := range a.Prefixes {
		if n.IsValid() && f(unmapPrefix(n)) {
			return true
		}
	}
	for _, v := range a.Values {
		if n, ok := valueNet(v); ok && f(n) {
			return true
		}
	}
	return false
}

func valueNet(v Pair) (netip.Prefix, bool) {
	switch v.Name {
	case nameIP:
		a, err := netip.ParseAddr(v.Value)
		if err != nil {
			return netip.Prefix{}, false
		}
		a = a.Unmap().WithZone("")
		return netip.PrefixFrom(a, a.BitLen()), true
	case namePrefix:
		p, err := netip.ParsePrefix(v.Value)
		if err != nil {
			return netip.Prefix{}, false
		}
		return unmapPrefix(p), true
	}
	return netip.Prefix{}, false
}

const (
	nameIP     = "ip.src"
	namePrefix = "ip.src.prefix"
)

// canonical validates the allowlist and returns it with masked prefixes and
// canonical values, so Allows compares like with like.
func (a Allowlist) canonical() (Allowlist, error) {
	var out Allowlist
	for i, p := range a.Prefixes {
		if !p.IsValid() {
			return Allowlist{}, fmt.Errorf("allowlist prefix %d: invalid prefix", i+1)
		}
		out.Prefixes = append(out.Prefixes, unmapPrefix(p))
	}
	for i, v := range a.Values {
		s, err := Canonical(Scope{v})
		if err != nil {
			return Allowlist{}, fmt.Errorf("allowlist value %d: %w", i+1, err)
		}
		out.Values = append(out.Values, s[0])
	}
	return out, nil
}

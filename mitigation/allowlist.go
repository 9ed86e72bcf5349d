package mitigation

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/guardd/guardd/characteristics"
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
//
// A client is allowlisted, and must receive no action whatever the scope of
// the mitigations its request matches (an ip.src.country, ip.src.asnum or
// http.user_agent scope covers allowlisted clients too), when its address lies
// in a listed network or its request holds a listed value: see
// Store.Allowlisted.
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
		if n, ok := Network(v); ok && f(n) {
			return true
		}
	}
	return false
}

// Network returns the network an ip.src or ip.src.prefix pair names: an
// address as a one-address prefix, a prefix masked, IPv4-mapped forms as
// IPv4. ok is false for other characteristics and for values that do not
// parse.
func Network(v Pair) (n netip.Prefix, ok bool) {
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

// eventMatcher is an Allowlist compiled for the per-request check: networks by
// family, and values with their characteristic parsed (numbers as numbers).
type eventMatcher struct {
	v4, v6 []netip.Prefix
	values []valueMatch
}

type valueMatch struct {
	c   characteristics.Characteristic
	num bool
	s   string
	f   float64
}

// compile returns the matcher of a canonical allowlist.
func (a Allowlist) compile() (*eventMatcher, error) {
	m := &eventMatcher{}
	addNet := func(p netip.Prefix) {
		if p.Addr().Is4() {
			m.v4 = append(m.v4, p)
		} else {
			m.v6 = append(m.v6, p)
		}
	}
	for _, p := range a.Prefixes {
		addNet(p)
	}
	for _, v := range a.Values {
		if n, ok := Network(v); ok {
			addNet(n)
			continue
		}
		c, err := characteristics.Parse(v.Name)
		if err != nil {
			return nil, err
		}
		vm := valueMatch{c: c, s: v.Value}
		if c.Kind() == characteristics.KindNumber {
			if f, err := strconv.ParseFloat(v.Value, 64); err == nil {
				vm.num, vm.f = true, f
			}
		}
		m.values = append(m.values, vm)
	}
	return m, nil
}

// matches reports whether e's client address lies in a listed network or e
// holds a listed value. It does not allocate.
func (m *eventMatcher) matches(e *characteristics.Event) bool {
	if a := e.IP.Unmap(); a.IsValid() {
		nets := m.v6
		if a.Is4() {
			nets = m.v4
		}
		a = a.WithZone("")
		for _, n := range nets {
			if n.Contains(a) {
				return true
			}
		}
	}
	for i := range m.values {
		v := &m.values[i]
		if v.num {
			if f, ok := v.c.Num(e); ok && f == v.f {
				return true
			}
			continue
		}
		if s, ok := v.c.Str(e); ok && s == v.s {
			return true
		}
	}
	return false
}

package mitigation

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/guardd/guardd/characteristics"
)

// Limits on a scope, checked by Add and by the state decoder. A value longer
// than MaxValueLen is refused rather than truncated: a truncated value would
// match other clients.
const (
	MaxScopePairs = 16
	MaxValueLen   = 8 << 10
)

// Pair is one characteristic and its value: the same type as the event's
// characteristics.Field, so a rule's scope moves from the engine to the
// store without a copy. Name is the canonical name
// (characteristics.Characteristic.String()); Value is the text form the
// characteristic's AppendValue produces.
type Pair = characteristics.Field

// Scope is what a mitigation applies to: characteristic values in the order the
// rule lists its characteristics. Order is significant: {a, b} and {b, a} are
// different scopes with different keys, so a caller computing a key from an
// event must hash the pairs in the rule's order (see Shapes).
type Scope []Pair

// Key returns a stable 64-bit hash of the scope's canonical bytes: for each pair
// the uvarint length of the name, the name, the uvarint length of the value,
// the value (xxhash64, seed 0). Equal scopes have equal keys in every process.
// It does not allocate.
func (s Scope) Key() uint64 {
	var h Hasher
	h.Reset()
	for _, p := range s {
		h.WriteString(p.Name, p.Value)
	}
	return h.Sum64()
}

// Equal reports whether s and o hold the same pairs in the same order.
func (s Scope) Equal(o Scope) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// String returns the pairs as name=value separated by spaces, e.g.
// `ip.src=203.0.113.7` or `http.cookies["session"]=abc http.path=/login`.
// A value that is empty or holds a space, quote, '=' or a non-printable rune
// is written Go-quoted.
func (s Scope) String() string {
	var b []byte
	for i, p := range s {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, p.Name...)
		b = append(b, '=')
		if needsQuote(p.Value) {
			b = strconv.AppendQuote(b, p.Value)
		} else {
			b = append(b, p.Value...)
		}
	}
	return string(b)
}

func needsQuote(v string) bool {
	if v == "" || !utf8.ValidString(v) {
		return true
	}
	for _, r := range v {
		if r == ' ' || r == '"' || r == '=' || !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// Names returns the characteristic names of the scope, in order.
func (s Scope) Names() []string {
	out := make([]string, len(s))
	for i, p := range s {
		out[i] = p.Name
	}
	return out
}

// MarshalJSON writes the scope as a JSON object whose members keep the scope's
// order: {"ip.src":"203.0.113.7"}.
func (s Scope) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range s {
		if i > 0 {
			b = append(b, ',')
		}
		n, err := json.Marshal(p.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, n...)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a JSON object of string members, keeping their order. It
// refuses duplicate names and non-string values; it does not canonicalise (see
// Canonical).
func (s *Scope) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	t, err := d.Token()
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	if t == nil { // null
		*s = nil
		return nil
	}
	if t != json.Delim('{') {
		return errors.New("scope: want a JSON object")
	}
	var out Scope
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return fmt.Errorf("scope: %w", err)
		}
		name, _ := t.(string)
		t, err = d.Token()
		if err != nil {
			return fmt.Errorf("scope: %w", err)
		}
		value, ok := t.(string)
		if !ok {
			return fmt.Errorf("scope: value of %q is not a string", name)
		}
		for _, p := range out {
			if p.Name == name {
				return fmt.Errorf("scope: duplicate name %q", name)
			}
		}
		if len(out) == MaxScopePairs {
			return fmt.Errorf("scope: more than %d pairs", MaxScopePairs)
		}
		out = append(out, Pair{Name: name, Value: value})
	}
	if _, err := d.Token(); err != nil { // '}'
		return fmt.Errorf("scope: %w", err)
	}
	*s = out
	return nil
}

// Canonical returns a copy of s that owns its strings (values may alias an
// event's buffers), with names and values in canonical form, or an error naming
// the offending pair. Names are parsed with characteristics.Parse and written
// back with String (so ip.asnum becomes ip.src.asnum and header names are
// lower-cased). Addresses are unmapped (::ffff:192.0.2.1 becomes 192.0.2.1)
// and lose their zone, prefixes are masked, numbers are written as
// characteristics.AppendValue writes them. Empty values are refused: a
// mitigation on "no cookie" would hit every client without one.
func Canonical(s Scope) (Scope, error) {
	if len(s) == 0 {
		return nil, errors.New("empty scope")
	}
	if len(s) > MaxScopePairs {
		return nil, fmt.Errorf("scope has %d pairs, more than %d", len(s), MaxScopePairs)
	}
	out := make(Scope, len(s))
	for i, p := range s {
		c, err := characteristics.Parse(p.Name)
		if err != nil {
			return nil, fmt.Errorf("scope pair %d: %w", i+1, err)
		}
		name := c.String()
		for _, q := range out[:i] {
			if q.Name == name {
				return nil, fmt.Errorf("scope pair %d: duplicate %s", i+1, name)
			}
		}
		v, err := canonicalValue(c.Kind(), p.Value)
		if err != nil {
			return nil, fmt.Errorf("scope pair %d (%s): %w", i+1, name, err)
		}
		out[i] = Pair{Name: strings.Clone(name), Value: v}
	}
	return out, nil
}

func canonicalValue(k characteristics.Kind, v string) (string, error) {
	switch {
	case v == "":
		return "", errors.New("empty value")
	case len(v) > MaxValueLen:
		return "", fmt.Errorf("value of %d bytes, more than %d", len(v), MaxValueLen)
	}
	switch k {
	case characteristics.KindAddr:
		a, err := netip.ParseAddr(v)
		if err != nil {
			return "", err
		}
		return a.Unmap().WithZone("").String(), nil
	case characteristics.KindPrefix:
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return "", err
		}
		return unmapPrefix(p).String(), nil
	case characteristics.KindNumber:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", fmt.Errorf("not a number: %q", v)
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	return strings.Clone(v), nil
}

// unmapPrefix turns ::ffff:a.b.c.d/96+n into a.b.c.d/n and masks the prefix.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	if a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// Hasher computes scope keys incrementally, so a caller can key an event's
// values without building a Scope: Reset, then WriteString or Write for each
// pair in the rule's order, then Sum64. The result equals Scope.Key of the same
// pairs. A Hasher on the stack does not allocate. The zero value must be Reset
// before use.
type Hasher struct {
	d   xxhash.Digest
	len [binary.MaxVarintLen64]byte
}

// Reset starts a new key.
func (h *Hasher) Reset() { h.d.Reset() }

// WriteString adds one pair.
func (h *Hasher) WriteString(name, value string) {
	h.writeLen(len(name))
	h.d.WriteString(name)
	h.writeLen(len(value))
	h.d.WriteString(value)
}

// Write adds one pair whose value is in a byte slice, as AppendValue gives it.
func (h *Hasher) Write(name string, value []byte) {
	h.writeLen(len(name))
	h.d.WriteString(name)
	h.writeLen(len(value))
	h.d.Write(value)
}

func (h *Hasher) writeLen(n int) {
	k := binary.PutUvarint(h.len[:], uint64(n))
	h.d.Write(h.len[:k])
}

// Sum64 returns the key.
func (h *Hasher) Sum64() uint64 { return h.d.Sum64() }

package rules

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/guardd/guardd/characteristics"
)

// mergeAlts merges alternatives that are identical but for one string
// condition whose constant differs, such as the queries partial evaluation
// makes of `some s in scanners; contains(ua, s)`: one alternative per
// element becomes one condition over the whole set (a multi-pattern
// matcher, a prefix or suffix table, or a set lookup).
func mergeAlts(alts [][]step, sigs [][]condSig) [][]step {
	done := make([]bool, len(alts))
	var out [][]step
	for pos := 0; ; pos++ {
		any := false
		groups := map[string][]int{}
		var order []string
		for i, sig := range sigs {
			if done[i] || pos >= len(sig) {
				continue
			}
			any = true
			v := sig[pos]
			if v.negated || v.o == nil || v.o.typ != tString {
				continue
			}
			switch v.op {
			case "contains", "startswith", "endswith", "equal":
			default:
				continue
			}
			var b strings.Builder
			b.WriteString(v.op + "\x00" + v.key)
			for j, w := range sig {
				if j != pos {
					b.WriteString("\x00" + w.String())
				}
			}
			k := b.String()
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], i)
		}
		if !any {
			break
		}
		for _, k := range order {
			g := groups[k]
			if len(g) < 2 {
				continue
			}
			first := sigs[g[0]][pos]
			var consts []string
			for _, i := range g {
				consts = append(consts, sigs[i][pos].s)
				done[i] = true
			}
			alt := append([]step(nil), alts[g[0]]...)
			// Named by its operand, not by how the rule wrote it (a
			// variable's name means nothing outside its body).
			name := fmt.Sprintf("merged:%s(%s, %q)", first.op, operandName(first.o), consts)
			alt[pos] = step{mergedCond(first.op, first.o, consts), slotFor(name), alts[g[0]][pos].src, name, &shapeInfo{consts: consts, at: anchorOf(first.op)}, alts[g[0]][pos].cost, alts[g[0]][pos].needsJA4}
			out = append(out, alt)
		}
	}
	for i, alt := range alts {
		if !done[i] {
			out = append(out, alt)
		}
	}
	// Keep the original order of evaluation roughly: cheap single
	// alternatives first is not knowable here, so merged ones go last.
	return out
}

func mergedCond(op string, o *operand, consts []string) cond {
	switch op {
	case "contains":
		return containsCond(o, consts)
	case "startswith", "endswith":
		m := newAffixSet(consts, op == "endswith")
		return func(e *characteristics.Event, st *state) bool {
			v, ok := o.str(e, st)
			return ok && m.match(v)
		}
	default: // equal
		m := newStrSet(consts)
		return func(e *characteristics.Event, st *state) bool {
			v, ok := o.str(e, st)
			return ok && m.has(v)
		}
	}
}

// containsCond reports whether o contains any of needles. For lower(x) with
// lower-case ASCII needles it scans x itself, folding ASCII case on the fly,
// and lower-cases x only when x has non-ASCII bytes (whose lower case may
// be ASCII, as the Kelvin sign's is k).
func containsCond(o *operand, needles []string) cond {
	m := newMultiContains(needles)
	fused := o.fold == foldLower && o.base != nil
	for _, n := range needles {
		for i := 0; i < len(n); i++ {
			if n[i] >= utf8.RuneSelf || ('A' <= n[i] && n[i] <= 'Z') {
				fused = false
			}
		}
	}
	if sourceOf(o.c) != srcNone {
		// A plan remembers the results per value of this field.
		if !fused {
			return func(e *characteristics.Event, st *state) bool {
				v, ok := o.str(e, st)
				return ok && m.match(v, false)
			}
		}
		return func(e *characteristics.Event, st *state) bool {
			v, ok := o.base.str(e, st)
			if !ok {
				return false
			}
			if m.match(v, true) {
				return true
			}
			if isASCII(v) {
				return false
			}
			lv, _ := o.str(e, st)
			return m.match(lv, false)
		}
	}
	if !fused {
		return func(e *characteristics.Event, st *state) bool {
			v, ok := o.str(e, st)
			if !ok {
				return false
			}
			if res, hit := st.memoGet(m, v); hit {
				return res
			}
			res := m.match(v, false)
			st.memoPut(m, v, res)
			return res
		}
	}
	return func(e *characteristics.Event, st *state) bool {
		v, ok := o.base.str(e, st)
		if !ok {
			return false
		}
		if res, hit := st.memoGet(m, v); hit {
			return res
		}
		res := m.match(v, true)
		if !res && !isASCII(v) {
			lv, _ := o.str(e, st)
			res = m.match(lv, false)
		}
		st.memoPut(m, v, res)
		return res
	}
}

func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		_ = s[i+7]
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// multiContains finds any of a set of needles in a string with the
// Wu-Manber algorithm: a shift table over 2-byte blocks lets the scan jump
// ahead by up to m-1 bytes (m = the shortest needle) where no needle can end,
// and needles are compared only where the table says one may. Bytes are
// hashed with |0x20, so one table serves both the exact and the
// ASCII-case-folded match.
type multiContains struct {
	m      int // length of the shortest needle
	empty  bool
	shift  [1 << 12]uint8
	filter [1 << 10]uint64 // hashes of the first min(m, 4) bytes of each needle
	byHash map[uint16][]string
}

const hashMul = 0x9E3779B1

func newMultiContains(needles []string) *multiContains {
	mc := &multiContains{m: 255, byHash: map[uint16][]string{}}
	for _, n := range needles {
		if n == "" {
			mc.empty = true
			continue
		}
		mc.m = min(mc.m, len(n))
	}
	if mc.empty {
		return mc
	}
	m := mc.m
	for i := range mc.shift {
		mc.shift[i] = uint8(max(m-1, 1))
	}
	for _, n := range needles {
		if m >= 2 {
			for j := 2; j <= m; j++ {
				h := blockHash(n[j-2], n[j-1])
				mc.shift[h] = min(mc.shift[h], uint8(m-j))
			}
		}
		h := mc.prefixHash(n, 0)
		mc.filter[h>>6] |= 1 << (h & 63)
		mc.byHash[h] = append(mc.byHash[h], n)
	}
	return mc
}

// blockHash indexes the shift table by the low six bits of each byte with
// ASCII case folded (|0x20): letters and digits get distinct values, and the
// few punctuation bytes that collide with them only make shifts shorter.
func blockHash(a, b byte) uint32 {
	return uint32((a|0x20)&0x3f) | uint32((b|0x20)&0x3f)<<6
}

func (mc *multiContains) prefixHash(s string, i int) uint16 {
	var w uint32
	k := min(mc.m, 4)
	if k == 4 {
		_ = s[i+3]
		w = uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
	} else {
		for j := 0; j < k; j++ {
			w |= uint32(s[i+j]) << (8 * j)
		}
	}
	w |= 0x20202020 >> (8 * (4 - k))
	return uint16((w * hashMul) >> 16)
}

// match reports whether s contains a needle; with fold, upper-case ASCII
// letters of s match their lower-case needles.
func (mc *multiContains) match(s string, fold bool) bool {
	if mc.empty {
		return true
	}
	m := mc.m
	if m == 1 {
		for i := range len(s) {
			if mc.candidate(s, i, fold) {
				return true
			}
		}
		return false
	}
	shift := &mc.shift
	// i is the start of the 2-byte block that ends the current window.
	for i := m - 2; i+1 < len(s); {
		sh := shift[blockHash(s[i], s[i+1])]
		if sh > 0 {
			i += int(sh)
			continue
		}
		if mc.candidate(s, i+2-m, fold) {
			return true
		}
		i++
	}
	return false
}

func (mc *multiContains) candidate(s string, i int, fold bool) bool {
	h := mc.prefixHash(s, i)
	if mc.filter[h>>6]&(1<<(h&63)) == 0 {
		return false
	}
	for _, n := range mc.byHash[h] {
		if len(s)-i >= len(n) && equalAt(s[i:i+len(n)], n, fold) {
			return true
		}
	}
	return false
}

func equalAt(s, n string, fold bool) bool {
	if !fold {
		return s == n
	}
	for j := 0; j < len(n); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != n[j] {
			return false
		}
	}
	return true
}

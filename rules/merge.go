package rules

import (
	"strings"

	"github.com/guardd/guardd/characteristics"
)

// mergeAlts merges alternatives that are identical but for one string
// condition whose constant differs, such as the queries partial evaluation
// makes of `some s in scanners; contains(ua, s)`: one alternative per
// element becomes one condition over the whole set (a multi-pattern
// matcher, a prefix or suffix table, or a set lookup).
func mergeAlts(alts [][]cond, sigs [][]condSig) [][]cond {
	done := make([]bool, len(alts))
	var out [][]cond
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
			alt := append([]cond(nil), alts[g[0]]...)
			alt[pos] = mergedCond(first.op, first.o, consts)
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
		m := newMultiContains(consts)
		return func(e *characteristics.Event, st *state) bool {
			v, ok := o.str(e, st)
			return ok && m.match(v)
		}
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

// multiContains reports whether a string contains any of a set of needles:
// an Aho-Corasick automaton with a dense transition table over the byte
// classes that occur in the needles, one table load per input byte.
type multiContains struct {
	classes [256]uint8
	nclass  int
	delta   []int32 // state*nclass + class -> state
	accept  []bool
	empty   bool
}

func newMultiContains(needles []string) *multiContains {
	m := &multiContains{}
	n := 1
	for _, s := range needles {
		if s == "" {
			m.empty = true
		}
		for i := 0; i < len(s); i++ {
			if m.classes[s[i]] == 0 {
				m.classes[s[i]] = uint8(n)
				n++
				if n > 255 {
					// Too many distinct bytes for a dense table: fall back
					// to one class per byte value.
					for b := range m.classes {
						m.classes[b] = uint8(b)
					}
					n = 256
					break
				}
			}
		}
		if n == 256 {
			break
		}
	}
	if n == 256 {
		for b := range m.classes {
			m.classes[b] = uint8(b)
		}
	}
	m.nclass = n
	// Trie.
	type node struct {
		next map[int]int32
		fail int32
	}
	nodes := []node{{next: map[int]int32{}}}
	var accept []bool
	accept = append(accept, false)
	for _, s := range needles {
		st := int32(0)
		for i := 0; i < len(s); i++ {
			c := int(m.classes[s[i]])
			nx, ok := nodes[st].next[c]
			if !ok {
				nx = int32(len(nodes))
				nodes = append(nodes, node{next: map[int]int32{}})
				accept = append(accept, false)
				nodes[st].next[c] = nx
			}
			st = nx
		}
		accept[st] = true
	}
	// Breadth-first: failure links and the dense table.
	m.delta = make([]int32, len(nodes)*n)
	queue := []int32{0}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		f := nodes[st].fail
		if accept[f] {
			accept[st] = true
		}
		for c := 0; c < n; c++ {
			if nx, ok := nodes[st].next[c]; ok {
				if st == 0 {
					nodes[nx].fail = 0
				} else {
					nodes[nx].fail = m.delta[int(f)*n+c]
				}
				m.delta[int(st)*n+c] = nx
				queue = append(queue, nx)
			} else if st != 0 {
				m.delta[int(st)*n+c] = m.delta[int(f)*n+c]
			}
		}
	}
	m.accept = accept
	return m
}

func (m *multiContains) match(s string) bool {
	if m.empty {
		return true
	}
	st := int32(0)
	n := int32(m.nclass)
	for i := 0; i < len(s); i++ {
		st = m.delta[st*n+int32(m.classes[s[i]])]
		if m.accept[st] {
			return true
		}
	}
	return false
}

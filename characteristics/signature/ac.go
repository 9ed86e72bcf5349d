package signature

// automaton is an Aho-Corasick automaton compiled into a DFA over a reduced
// alphabet: bytes that occur in no pattern share class 0, ASCII letters are
// folded to lower case. Each state's out is the union of the classes of the
// patterns that end there (through failure links too).
type automaton struct {
	alpha  [256]uint8 // byte → alphabet index
	width  int        // alphabet size
	next   []uint16   // state*width + index → state
	out    []Mask     // state → classes matched on reaching it
	anyOut []bool
}

func fold(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func newAutomaton(pats []pattern) *automaton {
	a := &automaton{}
	// Alphabet: index 0 for every byte in no pattern.
	n := 1
	for _, p := range pats {
		for i := 0; i < len(p.text); i++ {
			c := fold(p.text[i])
			if a.alpha[c] == 0 {
				a.alpha[c] = uint8(n)
				n++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		a.alpha[c] = a.alpha[c+'a'-'A']
	}
	a.width = n
	// Trie.
	type node struct {
		child map[uint8]int
		out   Mask
		fail  int
	}
	nodes := []node{{child: map[uint8]int{}}}
	for _, p := range pats {
		s := 0
		for i := 0; i < len(p.text); i++ {
			k := a.alpha[fold(p.text[i])]
			nx, ok := nodes[s].child[k]
			if !ok {
				nx = len(nodes)
				nodes = append(nodes, node{child: map[uint8]int{}})
				nodes[s].child[k] = nx
			}
			s = nx
		}
		nodes[s].out |= 1 << p.class
	}
	if len(nodes) > 1<<15 {
		panic("signature: too many automaton states")
	}
	// Breadth-first failure links and DFA transitions.
	a.next = make([]uint16, len(nodes)*n)
	a.out = make([]Mask, len(nodes))
	queue := []int{}
	for k := 0; k < n; k++ {
		if c, ok := nodes[0].child[uint8(k)]; ok {
			nodes[c].fail = 0
			a.next[k] = uint16(c)
			queue = append(queue, c)
		}
	}
	a.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		nodes[s].out |= nodes[nodes[s].fail].out
		a.out[s] = nodes[s].out
		for k := 0; k < n; k++ {
			if c, ok := nodes[s].child[uint8(k)]; ok {
				nodes[c].fail = int(a.next[nodes[s].fail*n+k])
				a.next[s*n+k] = uint16(c)
				queue = append(queue, c)
			} else {
				a.next[s*n+k] = a.next[nodes[s].fail*n+k]
			}
		}
	}
	// Mark transitions into states with an output, so that the scan loads
	// out only on a match.
	for i, t := range a.next {
		if a.out[t] != 0 {
			a.next[i] = t | outFlag
		}
	}
	return a
}

const outFlag = 1 << 15

// scan returns the union of the classes of every pattern found in s.
func (a *automaton) scan(s string) Mask {
	var m Mask
	st := 0
	w := a.width
	next, out := a.next, a.out
	for i := 0; i < len(s); i++ {
		t := next[st*w+int(a.alpha[s[i]])]
		if t&outFlag != 0 {
			t &^= outFlag
			m |= out[t]
		}
		st = int(t)
	}
	return m
}

package rules

import (
	"cmp"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/guardd/guardd/characteristics"
)

// plan is how a Set evaluates its native predicates. Every distinct
// condition of the set is one bit; an alternative of a predicate (an AND of
// conditions) is the mask of the bits it needs and its conditions in cost
// order. Per event, bitState.known says which conditions are computed and
// bitState.val which of those held, and bitState.alive which alternatives
// are still worth trying: a condition that fails rules out every
// alternative that needs it, and a predicate that holds its other
// alternatives, so that those tried compute only what is still unknown,
// each condition at most once per event however many rules ask.
//
// The conditions that are pure functions of one origin field (the path, the
// query, the user agent, the referer, the status) take contiguous bits of
// one word, a group: their known and held bits are remembered per value of
// the field across events (in bitState's tables, tagged with the plan's id
// so that another Set, a reload, never reads them), and the status group is
// tabulated for every status when the plan is built. With them is
// remembered the set of alternatives their failed conditions rule out
// (dead), so that an event visits only the alternatives still alive once
// its fields' values are looked up: on real traffic a handful of the
// library's. A path is remembered by its shape when the digits it carries
// are ones no condition of the group can tell apart (shape.go).
type plan struct {
	id    uint64   // unique per plan, never 0
	conds []cond   // by bit; those from maxBits on are not cached
	names []string // of the conditions, by bit, for messages
	// shape, when not nil, says which digit runs of a path no condition
	// of the path group can tell apart (shape.go).
	shape  *pathShape
	groups []planGroup
	rules  []rulePlan
	rw     int // words of a Matches' bits
	// Rules whose count or mitigate predicate is always true, whose
	// mitigate is their count, and those OPA evaluates.
	countTrue, mitTrue, mitCount []uint64
	opa                          []int
	alts                         []planAlt // in predicate order
	bits                         []int32   // the conditions of each alternative in evaluation order
	valid                        altVec    // the alternatives that exist, of the first maxAlts

	// deadBy gives, for each bit, the alternatives that need it: those a
	// failed condition rules out.
	deadBy [maxBits]altVec
	// same gives, for each alternative, the alternatives of its predicate:
	// those its success makes pointless.
	same []altVec
	// lookups are the groups begin looks up, in order, each with the
	// alternatives that read one of its bits: a group none of the
	// alternatives still alive reads is not looked up. statusWord,
	// statusShift and statusMask place the status group (statusWord < 0:
	// none).
	lookups                 []groupLookup
	statusWord              int
	statusShift, statusMask uint64
	// groupMask holds the bits of every group.
	groupMask bitVec
	// status and statusDead tabulate the status group: its held bits, and
	// the alternatives its failed conditions rule out, by status.
	status     []uint64
	statusDead []altVec
}

// maxBits bounds the conditions of a plan that have a bit; the others (a
// library of more than 256 distinct conditions) are evaluated each time an
// alternative reaches them.
const maxBits = 64 * words

const words = 4

type bitVec [words]uint64

// maxAlts bounds the alternatives a plan rules out by bit sets; the others
// are each tried on every event.
const maxAlts = 64 * altWords

const altWords = 2

type altVec [altWords]uint64

// planAlt is one alternative of predicate pred: the bits it needs, and its
// conditions in evaluation order, bits[from:to].
type planAlt struct {
	mask     bitVec
	from, to int32
	pred     int32
}

type planGroup struct {
	src   origin
	word  int
	shift uint
	mask  uint64 // the group's bits, before the shift
}

// rulePlan gives the predicates of a rule: a predicate number, or predOPA
// (evaluated by OPA), or predTrue (always true, as `mitigate := true`), or
// predNone (no mitigate expression: the count's result).
type rulePlan struct{ count, mitigate int32 }

const (
	predOPA  = -1
	predTrue = -2
	predNone = -3
)

// planIDs numbers plans; memo entries carry the number of the plan whose
// bits they hold.
var planIDs atomic.Uint64

// ja4Present is the condition input.tls.ja4, which every condition that
// needsJA4 implies (the same slot as the rules' own).
var ja4Present = step{
	c:     func(e *characteristics.Event, _ *state) bool { return e.TLS.JA4 != "" },
	slot:  slotFor("cond:input.tls.ja4"),
	name:  "input.tls.ja4",
	shape: &shapeInfo{},
	cost:  1,
}

// cheapCost is the most translator.cost of a condition of the user agent,
// the query or the referer that goes before those computed per event.
const cheapCost = 2

// maxGroup is the most conditions of one origin a group holds; more are
// evaluated per event.
const maxGroup = 64

func newPlan(evals []*ruleEval) *plan {
	p := &plan{id: planIDs.Add(1)}
	type condInfo struct {
		c     cond
		src   origin
		bit   int32
		name  string
		shape *shapeInfo
		cost  int
	}
	var infos []condInfo
	bySlot := map[int]int{}
	index := func(st step) int {
		if st.slot >= 0 {
			if i, ok := bySlot[st.slot]; ok {
				return i
			}
			bySlot[st.slot] = len(infos)
		}
		infos = append(infos, condInfo{c: st.c, src: st.src, name: st.name, shape: st.shape, cost: st.cost})
		return len(infos) - 1
	}
	// The predicates as lists of condition indexes, before bits exist. The
	// count predicate of rule i is predicate i and its mitigate predicate
	// is rw*64+i, so that the words of predicate results are those of
	// Matches.
	n := len(evals)
	p.rw = (n + 63) >> 6
	preds := make([][][]int, 2*p.rw*64)
	p.countTrue = make([]uint64, p.rw)
	p.mitTrue = make([]uint64, p.rw)
	p.mitCount = make([]uint64, p.rw)
	addPred := func(pi int, pr *predicate) int32 {
		if pr == nil {
			return predOPA
		}
		if len(pr.alts) == 1 && len(pr.alts[0]) == 0 {
			return predTrue
		}
		var alts [][]int
		for _, alt := range pr.alts {
			idx := make([]int, 0, len(alt)+1)
			if slices.ContainsFunc(alt, func(st step) bool { return st.needsJA4 }) &&
				!slices.ContainsFunc(alt, func(st step) bool { return st.slot == ja4Present.slot }) {
				// Implied, and cheap: one test on the many events
				// without a fingerprint rules out every alternative
				// that reads tls.client.
				idx = append(idx, index(ja4Present))
			}
			for _, st := range alt {
				idx = append(idx, index(st))
			}
			alts = append(alts, idx)
		}
		preds[pi] = alts
		return int32(pi)
	}
	for i, re := range evals {
		rp := rulePlan{count: addPred(i, re.count), mitigate: predNone}
		if re.rule.hasMitigate {
			rp.mitigate = addPred(p.rw*64+i, re.mitigate)
		}
		w, m := i>>6, uint64(1)<<(i&63)
		switch {
		case rp.count == predTrue:
			p.countTrue[w] |= m
		case rp.count == predOPA:
			p.opa = append(p.opa, i)
		}
		switch rp.mitigate {
		case predTrue:
			p.mitTrue[w] |= m
		case predNone:
			p.mitCount[w] |= m
		case predOPA:
			if rp.count != predOPA {
				p.opa = append(p.opa, i)
			}
		}
		p.rules = append(p.rules, rp)
	}

	// Bits: the groups first, each within one word, then the rest.
	var bit int32
	var size [nOrigins]int
	for i := range infos {
		src := infos[i].src
		if src == srcNone {
			continue
		}
		if size[src] == maxGroup {
			infos[i].src = srcNone
			continue
		}
		size[src]++
	}
	for src := srcNone + 1; src < nOrigins; src++ {
		n := size[src]
		if n == 0 {
			continue
		}
		if int(bit%64)+n > 64 {
			bit = (bit + 63) &^ 63
		}
		if int(bit)+n > maxBits {
			for i := range infos {
				if infos[i].src == src {
					infos[i].src = srcNone
				}
			}
			continue
		}
		g := planGroup{src: src, word: int(bit / 64), shift: uint(bit % 64), mask: ^uint64(0) >> (64 - n)}
		for i := range infos {
			if infos[i].src == src {
				infos[i].bit = bit
				bit++
			}
		}
		p.groups = append(p.groups, g)
		p.groupMask[g.word] |= g.mask << g.shift
	}

	for i := range infos {
		if infos[i].src == srcNone {
			infos[i].bit = bit
			bit++
		}
	}
	p.conds = make([]cond, bit)
	p.names = make([]string, bit)
	var pathShapes []*shapeInfo
	for _, in := range infos {
		p.conds[in.bit] = in.c
		p.names[in.bit] = in.name
		if in.src == srcPath {
			pathShapes = append(pathShapes, in.shape)
		}
	}
	p.shape = newPathShape(pathShapes)

	for pi, alts := range preds {
		for _, idx := range alts {
			// The conditions of the method, the protocol and the status go
			// first, then the cheap ones (a comparison, a prefix) of the
			// user agent, the query and the referer: they have few
			// values, so what they compute is remembered for nearly
			// every later event and may rule the alternative out for
			// them all, where a condition computed per event that fails
			// before them teaches nothing. The others keep their cost
			// order (a value never seen before is not worth scanning to
			// learn what a cheap test decides).
			rank := func(i int) int {
				switch infos[i].src {
				case srcMethod, srcProtocol, srcStatus:
					return 0
				case srcUA, srcQuery, srcReferer:
					if infos[i].cost <= cheapCost {
						return 1
					}
				}
				return 2
			}
			slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(rank(x), rank(y)) })
			a := planAlt{from: int32(len(p.bits)), pred: int32(pi)}
			for _, i := range idx {
				b := infos[i].bit
				if b < maxBits {
					a.mask[b/64] |= 1 << (b % 64)
				}
				if b < maxBits && len(p.alts) < maxAlts {
					p.deadBy[b].set(len(p.alts))
				}
				p.bits = append(p.bits, b)
			}
			a.to = int32(len(p.bits))
			if len(p.alts) < maxAlts {
				p.valid.set(len(p.alts))
			}
			p.alts = append(p.alts, a)
		}
	}

	p.same = make([]altVec, len(p.alts))
	for a := range min(len(p.alts), maxAlts) {
		for b := range min(len(p.alts), maxAlts) {
			if p.alts[a].pred == p.alts[b].pred {
				p.same[a].set(b)
			}
		}
	}
	p.statusWord = -1
	for _, g := range p.groups {
		if g.src == srcStatus {
			p.statusWord, p.statusShift, p.statusMask = g.word, uint64(g.shift), g.mask
			continue
		}
		l := groupLookup{src: g.src, word: uint8(g.word), shift: uint8(g.shift)}
		for a := range min(len(p.alts), maxAlts) {
			if p.alts[a].mask[g.word]&(g.mask<<g.shift) != 0 {
				l.needs.set(a)
			}
		}
		if len(p.alts) > maxAlts {
			// The alternatives beyond maxAlts are tried on every event
			// and may read any group.
			l.needs = altVec{^uint64(0), ^uint64(0)}
		}
		p.lookups = append(p.lookups, l)
	}
	// The groups of few values first, then the path, whose memo rules
	// out the most alternatives, so that the groups read by none of the
	// alternatives left are not looked up.
	slices.SortStableFunc(p.lookups, func(x, y groupLookup) int {
		return cmp.Compare(lookupRank[x.src], lookupRank[y.src])
	})

	for _, g := range p.groups {
		if g.src != srcStatus {
			continue
		}
		// A status condition reads the status alone: tabulate each.
		p.status = make([]uint64, statusMax)
		p.statusDead = make([]altVec, statusMax)
		var st state
		for v := range statusMax {
			e := characteristics.Event{Status: v}
			st.next()
			for j := range uint(64) {
				b := g.word*64 + int(g.shift+j)
				if g.mask&(1<<j) == 0 {
					continue
				}
				if p.conds[b](&e, &st) {
					p.status[v] |= 1 << j
				} else {
					p.statusDead[v].or(&p.deadBy[b])
				}
			}
		}
	}
	return p
}

func (v *altVec) set(i int)      { v[i>>6] |= 1 << (i & 63) }
func (v *altVec) or(w *altVec)   { v[0] |= w[0]; v[1] |= w[1] }
func (v *altVec) has(i int) bool { return v[i>>6]&(1<<(i&63)) != 0 }

// lookupRank orders the groups' lookups in begin.
var lookupRank = [nOrigins]int{srcStatus: 0, srcMethod: 1, srcProtocol: 2, srcPath: 3, srcUA: 4, srcReferer: 5, srcQuery: 6}

func (v *altVec) andNot(w *altVec)     { v[0] &^= w[0]; v[1] &^= w[1] }
func (v *altVec) meets(w *altVec) bool { return v[0]&w[0]|v[1]&w[1] != 0 }

// begin starts an event: no condition known but those its origin fields'
// values remember, and no alternative ruled out but by those. A group that
// no alternative still alive reads is not looked up.
func (p *plan) begin(e *characteristics.Event, b *bitState) {
	b.known, b.val, b.alive = bitVec{}, bitVec{}, p.valid
	if n := 2 * p.rw; len(b.preds) < n {
		b.preds = make([]uint64, n)
	} else {
		clear(b.preds)
	}
	if b.noMemo {
		b.ents = [nOrigins]*bitsEntry{}
		b.remembered = b.known
		return
	}
	if w := p.statusWord; w >= 0 && uint(e.Status) < statusMax {
		b.known[w&(words-1)] |= p.statusMask << p.statusShift
		b.val[w&(words-1)] |= p.status[e.Status] << p.statusShift
		b.alive.andNot(&p.statusDead[e.Status])
	}
	for i := range p.lookups {
		g := &p.lookups[i]
		if !b.alive.meets(&g.needs) {
			b.ents[g.src&(nOrigins-1)] = nil
			continue
		}
		var ent *bitsEntry
		if g.src == srcPath && p.shape != nil {
			var shaped bool
			b.shape, shaped = p.shape.key(e.Path, b.shape)
			if shaped {
				ent = b.lookupNS(srcPath, unsafe.String(unsafe.SliceData(b.shape), len(b.shape)), p.id, shapeNS)
			}
		}
		if ent == nil {
			ent = b.lookup(g.src, g.src.value(e), p.id)
		}
		b.ents[g.src&(nOrigins-1)] = ent
		w := g.word & (words - 1)
		b.known[w] |= ent.known << g.shift
		b.val[w] |= ent.val << g.shift
		b.alive.andNot(&ent.dead)
	}
	b.remembered = b.known
}

// begin masks an origin with nOrigins-1: it is a power of two.
var _ = [1]struct{}{}[nOrigins&(nOrigins-1)]

// groupLookup is a group begin looks up.
type groupLookup struct {
	src         origin
	word, shift uint8
	needs       altVec // the alternatives that read one of its bits
}

// run evaluates every native predicate: the alternatives still alive, in
// order, each until its predicate holds. A condition that fails rules out
// every alternative that needs it, and a predicate that holds its other
// alternatives.
func (p *plan) run(e *characteristics.Event, st *state) {
	b := &st.bits
	for w := range altWords {
		for v := b.alive[w]; v != 0; {
			i := bits.TrailingZeros64(v)
			p.tryAlive(w<<6|i, e, st)
			v = b.alive[w] &^ (2<<i - 1)
		}
	}
	for a := maxAlts; a < len(p.alts); a++ {
		p.try(a, e, st)
	}
}

// tryAlive evaluates alternative a, one of the first maxAlts and alive:
// none of its conditions is known to fail and its predicate does not hold
// yet.
func (p *plan) tryAlive(a int, e *characteristics.Event, st *state) {
	alt := &p.alts[a]
	b := &st.bits
	k, v := &b.known, &b.val
	for _, c := range p.bits[alt.from:alt.to] {
		if c < maxBits {
			i, m := c>>6&(words-1), uint64(1)<<(c&63)
			if k[i]&m != 0 {
				continue // known to hold: a is alive
			}
			k[i] |= m
			if !p.conds[c](e, st) {
				b.alive.andNot(&p.deadBy[c])
				return
			}
			v[i] |= m
		} else if !p.conds[c](e, st) {
			b.alive[a>>6] &^= 1 << (a & 63)
			return
		}
	}
	b.preds[alt.pred>>6] |= 1 << (alt.pred & 63)
	b.alive.andNot(&p.same[a])
}

// try evaluates alternative a, one beyond maxAlts, unless its predicate
// already holds.
func (p *plan) try(a int, e *characteristics.Event, st *state) {
	alt := &p.alts[a]
	b := &st.bits
	pw, pm := alt.pred>>6, uint64(1)<<(alt.pred&63)
	k, v := &b.known, &b.val
	if b.preds[pw]&pm != 0 ||
		alt.mask[0]&k[0]&^v[0]|alt.mask[1]&k[1]&^v[1]|alt.mask[2]&k[2]&^v[2]|alt.mask[3]&k[3]&^v[3] != 0 {
		return // its predicate holds, or a condition it needs is known to fail
	}
	for _, c := range p.bits[alt.from:alt.to] {
		if c < maxBits {
			i, m := c>>6&(words-1), uint64(1)<<(c&63)
			if k[i]&m != 0 {
				continue // known to hold: the mask test passed
			}
			k[i] |= m
			if !p.conds[c](e, st) {
				b.alive.andNot(&p.deadBy[c])
				return
			}
			v[i] |= m
		} else if !p.conds[c](e, st) {
			return
		}
	}
	b.preds[pw] |= pm
	if a < maxAlts {
		b.alive.andNot(&p.same[a])
	}
}

// holds reports the result of predicate pi after run.
func (b *bitState) holds(pi int32) bool {
	return pi == predTrue || pi >= 0 && b.preds[pi>>6]&(1<<(pi&63)) != 0
}

// results stores the rules' results in count and mitigate, all but those
// OPA evaluates.
func (p *plan) results(b *bitState, count, mitigate []uint64) {
	for w := range p.rw {
		c := b.preds[w] | p.countTrue[w]
		count[w] = c
		mitigate[w] = b.preds[p.rw+w] | p.mitTrue[w] | c&p.mitCount[w]
	}
}

// end remembers what the event computed of each group, and the
// alternatives that rules out.
func (p *plan) end(b *bitState) {
	k, r, gm := &b.known, &b.remembered, &p.groupMask
	if (k[0]^r[0])&gm[0]|(k[1]^r[1])&gm[1]|(k[2]^r[2])&gm[2]|(k[3]^r[3])&gm[3] == 0 {
		return // the event computed no condition of a group
	}
	for i := range p.groups {
		g := &p.groups[i]
		if g.src == srcStatus {
			continue
		}
		ent := b.ents[g.src]
		if ent == nil {
			continue
		}
		known := b.known[g.word] >> g.shift & g.mask
		if known == ent.known {
			continue
		}
		ent.known = known
		ent.val = b.val[g.word] >> g.shift & g.mask
		ent.dead = altVec{}
		base := g.word*64 + int(g.shift)
		for f := known &^ ent.val; f != 0; f &= f - 1 {
			ent.dead.or(&p.deadBy[base+bits.TrailingZeros64(f)])
		}
	}
}

package rules

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"strings"
	"unsafe"

	"github.com/guardd/guardd/characteristics"
)

// origin is an event field whose value most conditions of a library are a
// pure function of, and which repeats enormously in real traffic: a few
// hundred user agents, queries and referers, a few thousand paths, a few
// dozen statuses. The conditions of one origin form a group of a Set's plan
// whose results are remembered across events by the field's value, so that
// an event costs a hash and a lookup per origin rather than the conditions
// themselves (case folding, normalising, prefix and suffix tables, signature
// scans, libinjection).
type origin uint8

const (
	srcNone     origin = iota // evaluated per event
	srcPath                   // http.path, lower/upper of it, http.norm.path, http.anomalies[*]
	srcQuery                  // http.query, http.norm.query, http.args[*]
	srcUA                     // http.user_agent, http.norm.user_agent
	srcReferer                // http.referer, http.norm.referer
	srcMethod                 // http.method
	srcProtocol               // http.protocol
	srcStatus                 // http.status
	nOrigins
)

// memoSize is the number of remembered values per origin and goroutine (a
// direct-mapped table of 40-byte entries). Paths are the most varied.
var memoSize = [nOrigins]int{srcPath: 2048, srcQuery: 1024, srcUA: 512, srcReferer: 1024, srcMethod: 64, srcProtocol: 64}

// statusMax bounds the statuses whose conditions a plan tabulates.
const statusMax = 1000

// sourceOf returns the origin a characteristic's value derives from: the
// normalised forms, anomalies and arguments are computed from the raw field
// alone (characteristics/normalize.go).
func sourceOf(c characteristics.Characteristic) origin {
	switch n := c.String(); {
	case n == "http.path" || n == "http.norm.path" || strings.HasPrefix(n, "http.anomalies["):
		return srcPath
	case n == "http.query" || n == "http.norm.query" || strings.HasPrefix(n, "http.args["):
		return srcQuery
	case n == "http.user_agent" || n == "http.norm.user_agent":
		return srcUA
	case n == "http.referer" || n == "http.norm.referer":
		return srcReferer
	case n == "http.method":
		return srcMethod
	case n == "http.protocol":
		return srcProtocol
	case n == "http.status":
		return srcStatus
	}
	return srcNone
}

// value returns the raw field of e that src names.
func (src origin) value(e *characteristics.Event) string {
	switch src {
	case srcPath:
		return e.Path
	case srcQuery:
		return e.Query
	case srcUA:
		return e.UserAgent
	case srcReferer:
		return e.Referer
	case srcMethod:
		return e.Method
	case srcProtocol:
		return e.Protocol
	}
	return ""
}

// memoSeed keys the hash that, with its length and its first and last
// eight bytes, identifies a remembered value longer than 16 bytes. It is
// random per process, so no one can make two values collide on purpose,
// and an accidental collision is a 2^-64 event: a hit needs the hash, the
// length and the bytes to match. A value of at most 16 bytes is stored
// whole: its hit is exact.
var memoSeed = maphash.MakeSeed()

// shortMix keys the index of a short value, so that no one can aim values
// at one slot of the table (a collision there only evicts).
var shortMix = [2]uint64{rand.Uint64(), rand.Uint64()}

// bitsEntry remembers, for one value of an origin, which conditions of the
// origin's group have been computed (known) and which of those held (val),
// in the group's bit order of the plan that wrote it, and the alternatives
// of that plan its failed conditions rule out. It is 64 bytes: one cache
// line of a table (tables are large enough to be page-aligned).
type bitsEntry struct {
	k0, k1     uint64 // the value itself when it has at most 16 bytes, else its hash and ends
	n          uint64 // the value's length
	plan       uint64 // plan.id; 0 is never a plan's, so a zero entry is empty
	known, val uint64
	dead       altVec // the alternatives that known &^ val rules out
}

// bitState is the per-goroutine side of a plan: the condition bits of the
// event being evaluated and the memo tables.
type bitState struct {
	known, val bitVec   // computed this event, and held
	alive      altVec   // alternatives not ruled out yet, of the first maxAlts
	remembered bitVec   // known as begin found it
	preds      []uint64 // predicates that hold
	ents       [nOrigins]*bitsEntry
	tables     [nOrigins][]bitsEntry
	shape      []byte // the path's shape, when it has one
	noMemo     bool   // tests: evaluate every condition as if nothing were remembered
}

// lookup returns the entry of v in src's table for plan id, claiming it
// (forgetting what it held) when it holds another value or another plan's
// bits.
func (b *bitState) lookup(src origin, v string, id uint64) *bitsEntry {
	return b.lookupNS(src, v, id, 0)
}

// shapeNS marks the length of a path's shape (shape.go), so that a shape
// and a path with the same bytes are not one entry.
const shapeNS = 1 << 63

// lookupNS is lookup in namespace ns, 0 or shapeNS.
func (b *bitState) lookupNS(src origin, v string, id, ns uint64) *bitsEntry {
	t := b.tables[src]
	if t == nil {
		t = make([]bitsEntry, memoSize[src])
		b.tables[src] = t
	}
	n := uint64(len(v)) | ns
	var k0, k1, h uint64
	if len(v) <= 16 {
		k0, k1 = shortKey(v)
		// Every bit of the value reaches the index (the high half of a
		// product depends on all the bits of both factors).
		hi, lo := bits.Mul64(k0^shortMix[0], k1^shortMix[1]^n)
		h = hi ^ lo
	} else {
		k0 = maphash.String(memoSeed, v)
		p := unsafe.StringData(v)
		k1 = load64(p) ^ bits.RotateLeft64(load64((*byte)(unsafe.Add(unsafe.Pointer(p), len(v)-8))), 32)
		h = k0
	}
	ent := &t[h&uint64(len(t)-1)]
	if ent.k0 != k0 || ent.k1 != k1 || ent.n != n || ent.plan != id {
		*ent = bitsEntry{k0: k0, k1: k1, n: n, plan: id}
	}
	return ent
}

// shortKey returns the bytes of v, at most 16, as two words: with the
// length they identify v.
func shortKey(v string) (k0, k1 uint64) {
	n := len(v)
	p := unsafe.StringData(v)
	switch {
	case n >= 8:
		k0 = load64(p)
		k1 = load64((*byte)(unsafe.Add(unsafe.Pointer(p), n-8)))
	case n >= 4:
		k0 = uint64(load32(p)) | uint64(load32((*byte)(unsafe.Add(unsafe.Pointer(p), n-4))))<<32
	default:
		for i := range n {
			k0 |= uint64(v[i]) << (8 * i)
		}
	}
	return k0, k1
}

func load64(p *byte) uint64 { return binary.LittleEndian.Uint64(unsafe.Slice(p, 8)) }
func load32(p *byte) uint32 { return binary.LittleEndian.Uint32(unsafe.Slice(p, 4)) }

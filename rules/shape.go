package rules

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"github.com/guardd/guardd/characteristics/signature"
)

// A path's shape is what the path group of a plan remembers a path by when
// the path carries numbers no condition of the group can tell apart: the
// product, post and item ids of real sites, each seen once or twice, which
// would otherwise cost every condition of the group each time. The shape is
// the path with each such digit run replaced by shapeMark, so that
// /product/12345 and /product/678 share one memo entry.
//
// Which runs a plan may replace is proved when it is built, from what each
// condition of the path group is:
//
//   - Only a path of the shape alphabet (shapeClass: ASCII letters, digits
//     and / . _ ~ -) without "//" or "/." is shaped. Such a path is plain: it is its own
//     http.norm.path and has no http.anomalies (characteristics/normalize.go),
//     and guardd.xss is false on it (it has none of the bytes libinjection's
//     prefilter needs). Replacing one digit run by another keeps all of that.
//   - Every other condition must test whether constant strings occur in the
//     path (or its lower or upper case): equality, set membership, prefix,
//     suffix, contains, their merged and negated forms, presence, and
//     guardd.signature, whose fragments (signature.Fragments) are such
//     constants too. A regex, a glob, an ordering or anything else makes the
//     plan shape nothing.
//
// An occurrence of a constant c that covers a digit of the path s covers it
// with a digit of c, so with a maximal digit run of c, and the bytes of c
// around that run (those it has) equal the bytes of s around the digit run
// of s; for a prefix, the start of c is the start of s, and for a suffix
// the end of c is the end of s. A digit run of s whose neighbours (the bytes
// before and after it, ASCII case folded, or the start or end of s) can be
// no run's neighbours in any constant of the group is therefore covered by
// no occurrence of any constant: the occurrences of each constant in s, and
// so whether s starts with, ends with or contains it, are the same whatever
// digits the run holds. Such a run is isolated; the shape replaces isolated
// runs only. A constant that may occur anywhere and is made wholly of digits
// isolates nothing. Constants with a byte outside the shape alphabet never
// occur in a shaped path and are ignored.
//
// A constant the whole path is compared with (==, !=, in) is not one whose
// runs' neighbours count: s equals c only if their shapes are equal. When c
// has an isolated run, its shape (folded) is in exact, and a path of that
// shape is remembered as it is; otherwise a shaped path has an isolated run
// that c has not, and equals c no more than any path of its shape does.
type pathShape struct {
	// Neighbours of digit runs in the constants: before and after (pair),
	// before a run that ends a constant (before), after one that starts a
	// constant (after). Byte 0 stands for the start or the end of s.
	pair          [256][4]uint64
	before, after [256]bool
	exact         []string // shapes (ASCII case folded) of the constants compared with whole paths
}

// anchor says where a constant is looked for in a path.
type anchor uint8

const (
	anywhere anchor = iota
	atStart
	atEnd
	whole
)

// shapeInfo is what a condition reads of a path, for newPathShape: whether
// constant strings occur in it, guardd.signature's fragments, or
// guardd.xss. A condition without one is not proved to ignore digits.
type shapeInfo struct {
	consts    []string
	at        anchor
	signature bool
	xss       bool
}

// shapeMark replaces an isolated digit run in a shape: a byte no shaped
// path has.
const shapeMark = 0xff

const (
	shapeOther = iota // in the shape alphabet, not a digit
	shapeDigit
	shapeOut // not in the shape alphabet: the path is not shaped
)

var shapeClass = func() (t [256]uint8) {
	for i := range t {
		t[i] = shapeOut
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = shapeOther, shapeOther
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = shapeDigit
	}
	for _, c := range []byte("/._~-") {
		t[c] = shapeOther
	}
	return t
}()

// xssBytes are the bytes without one of which signature.XSS is false.
const xssBytes = "<>\"'`()"

func foldByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// newPathShape returns the shape of the path group whose conditions are
// described by infos, or nil when one of them is not proved to ignore
// isolated digit runs, or when no run could be isolated.
func newPathShape(infos []*shapeInfo) *pathShape {
	if len(infos) == 0 {
		return nil
	}
	ps := &pathShape{}
	sigDone := false
	for _, in := range infos {
		if in == nil {
			return nil
		}
		consts := in.consts
		if in.signature && !sigDone {
			sigDone = true
			consts = append(consts[:len(consts):len(consts)], signature.Fragments()...)
		}
		if in.at == whole {
			continue
		}
		for _, c := range consts {
			if !ps.add(c, in.at) {
				return nil
			}
		}
	}
	for _, in := range infos {
		if in.at != whole {
			continue
		}
		for _, c := range in.consts {
			if k, ok := ps.key(c, nil); ok {
				k = foldBytes(k)
				if !slices.Contains(ps.exact, string(k)) {
					ps.exact = append(ps.exact, string(k))
				}
			}
		}
	}
	return ps
}

func foldBytes(b []byte) []byte {
	for i, c := range b {
		b[i] = foldByte(c)
	}
	return b
}

// isExact reports whether shape k is, ASCII case folded, one in ps.exact.
func (ps *pathShape) isExact(k []byte) bool {
	for _, x := range ps.exact {
		if len(x) != len(k) {
			continue
		}
		i := 0
		for i < len(k) && foldByte(k[i]) == x[i] {
			i++
		}
		if i == len(k) {
			return true
		}
	}
	return false
}

// add records the neighbours of the digit runs of c, looked for at. It
// reports false when c may occur anywhere and is all digits: then no run is
// isolated.
func (ps *pathShape) add(c string, at anchor) bool {
	const any = 0x100
	for i := 0; i < len(c); i++ {
		if shapeClass[c[i]] == shapeOut {
			return true // never occurs in a shaped path
		}
	}
	for i := 0; i < len(c); {
		if shapeClass[c[i]] != shapeDigit {
			i++
			continue
		}
		j := i
		for j < len(c) && shapeClass[c[j]] == shapeDigit {
			j++
		}
		b, a := any, any
		switch {
		case i > 0:
			b = int(foldByte(c[i-1]))
		case at == atStart:
			b = 0
		}
		switch {
		case j < len(c):
			a = int(foldByte(c[j]))
		case at == atEnd:
			a = 0
		}
		switch {
		case b == any && a == any:
			return false
		case b == any:
			ps.after[a] = true
		case a == any:
			ps.before[b] = true
		default:
			ps.pair[b][a>>6] |= 1 << (a & 63)
		}
		i = j
	}
	return true
}

// isolated reports whether a digit run between bytes b and a (folded; 0 for
// the start or end of the path) is isolated.
func (ps *pathShape) isolated(b, a byte) bool {
	return !ps.before[b] && !ps.after[a] && ps.pair[b][a>>6]&(1<<(a&63)) == 0
}

// key returns the shape of path v in buf, and true, when v is shaped and has
// an isolated digit run; otherwise v is remembered as it is.
func (ps *pathShape) key(v string, buf []byte) ([]byte, bool) {
	buf = buf[:0]
	if !hasDigit(v) {
		return buf, false // most paths: nothing to shape
	}
	copied := 0   // v[:copied] is in buf
	run := -1     // start of the digit run being read
	var b byte    // the folded byte before it; 0 at the start
	var prev byte // the previous byte, folded
	shaped := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch shapeClass[c] {
		case shapeDigit:
			if run < 0 {
				run, b = i, prev
			}
			prev = c
			continue
		case shapeOut:
			return buf, false
		}
		if c == '/' && i+1 < len(v) && (v[i+1] == '/' || v[i+1] == '.') {
			return buf, false // not plain
		}
		f := foldByte(c)
		if run >= 0 {
			if ps.isolated(b, f) {
				buf = append(append(buf, v[copied:run]...), shapeMark)
				copied, shaped = i, true
			}
			run = -1
		}
		prev = f
	}
	if run >= 0 && ps.isolated(b, 0) {
		buf = append(append(buf, v[copied:run]...), shapeMark)
		copied, shaped = len(v), true
	}
	if !shaped {
		return buf, false
	}
	buf = append(buf, v[copied:]...)
	if len(ps.exact) > 0 && ps.isExact(buf) {
		return buf, false
	}
	return buf, true
}

// anchorOf returns where the string operation op looks for its constant.
func anchorOf(op string) anchor {
	switch op {
	case "startswith", "strings.any_prefix_match":
		return atStart
	case "endswith", "strings.any_suffix_match":
		return atEnd
	case "equal", "neq":
		return whole
	}
	return anywhere
}

// hasDigit reports whether s has an ASCII digit, eight bytes at a time.
func hasDigit(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		// A byte below 0x80 is a digit when adding 0x7f-'9' leaves its
		// high bit clear and adding 0x80-'0' sets it.
		lo := x &^ highs
		if (ones*(0x7f+'9'+1)-lo)&^x&(lo+ones*(0x7f-'0'+1))&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i]-'0' <= 9 {
			return true
		}
	}
	return false
}

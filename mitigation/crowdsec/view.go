package crowdsec

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// view is the store's table as bouncers see it: per value (an address or a
// CIDR), the decisions on it, of which one wins (ban over captcha, then the
// later expiry). Bouncers keep sets keyed by value, so telling them about two
// decisions on one value and then deleting one would unban a client another
// decision still covers; the view tells them about the winner only.
//
// Every change of a value is logged in a ring, so a bouncer's poll looks
// only at the values changed since its previous one.
type view struct {
	cursor  uint64 // store cursor the view is synced to
	synced  bool
	byValue map[string]*valueState
	byID    map[uint64]string // mitigation ID -> value
	bits    [2][129]int       // count of Range values per (family, prefix length)

	ring []logEntry
	head int
	n    int
	seq  uint64 // latest log seq
	base uint64 // oldest seq a bouncer cursor may hold and still replay
}

type valueState struct {
	ds  []decision // usually one
	seq uint64
	rng bool
	pfx netip.Prefix
}

type logEntry struct {
	seq   uint64
	value string
}

func (v *view) init(size int) {
	v.ring = make([]logEntry, size)
	v.byValue = map[string]*valueState{}
	v.byID = map[uint64]string{}
}

// logLocked records that value changed.
func (v *view) logLocked(value string) {
	v.seq++
	v.ring[v.head] = logEntry{v.seq, value}
	v.head = (v.head + 1) % len(v.ring)
	if v.n < len(v.ring) {
		v.n++
	} else {
		v.base = v.seq - uint64(v.n)
	}
	if st := v.byValue[value]; st != nil {
		st.seq = v.seq
	}
}

// changedSince returns the distinct values changed after seq, or false when
// the ring no longer reaches it.
func (v *view) changedSince(seq uint64) (map[string]struct{}, bool) {
	if seq < v.base || seq > v.seq {
		return nil, false
	}
	out := make(map[string]struct{}, v.seq-seq)
	for q := seq + 1; q <= v.seq; q++ {
		back := int(v.seq - q)
		e := &v.ring[(v.head-1-back+2*len(v.ring))%len(v.ring)]
		out[e.value] = struct{}{}
	}
	return out, true
}

func famIdx(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 0
	}
	return 1
}

func (v *view) removeIDLocked(id uint64) {
	val, ok := v.byID[id]
	if !ok {
		return
	}
	delete(v.byID, id)
	st := v.byValue[val]
	for i := range st.ds {
		if st.ds[i].id == id {
			st.ds = append(st.ds[:i], st.ds[i+1:]...)
			break
		}
	}
	if len(st.ds) == 0 {
		if st.rng {
			v.bits[famIdx(st.pfx)][st.pfx.Bits()]--
		}
		delete(v.byValue, val)
	}
	v.logLocked(val)
}

func (v *view) upsertLocked(d decision) {
	if old, ok := v.byID[d.id]; ok && old != d.value {
		v.removeIDLocked(d.id)
	}
	st := v.byValue[d.value]
	if st == nil {
		st = &valueState{rng: d.rng, pfx: d.pfx}
		v.byValue[d.value] = st
		if d.rng {
			v.bits[famIdx(d.pfx)][d.pfx.Bits()]++
		}
	}
	replaced := false
	for i := range st.ds {
		if st.ds[i].id == d.id {
			st.ds[i] = d
			replaced = true
			break
		}
	}
	if !replaced {
		st.ds = append(st.ds, d)
	}
	v.byID[d.id] = d.value
	v.logLocked(d.value)
}

// winner returns the decision a bouncer should hold for st at now.
func (st *valueState) winner(now time.Time) (*decision, bool) {
	var w *decision
	for i := range st.ds {
		d := &st.ds[i]
		if !d.expires.After(now) {
			continue
		}
		if w == nil || d.typ > w.typ || d.typ == w.typ && d.expires.After(w.expires) {
			w = d
		}
	}
	return w, w != nil
}

// syncLocked brings the view up to the store's change feed, rebuilding it
// from a snapshot when the feed no longer reaches the view's cursor.
func (s *Server) syncLocked(now time.Time) {
	v := &s.view
	if v.synced {
		added, deleted, cur, ok := s.store.Changes(v.cursor)
		if ok {
			for i := range deleted {
				v.removeIDLocked(deleted[i].ID)
			}
			for i := range added {
				if d, show := s.toDecision(&added[i]); show {
					v.upsertLocked(d)
				} else {
					v.removeIDLocked(added[i].ID)
				}
			}
			v.cursor = cur
			return
		}
		s.metrics.resyncs.Inc()
		s.log.Warn("crowdsec: change feed no longer reaches the view; rebuilding from a snapshot")
	}
	ms, cur := s.store.Snapshot(now)
	v.byValue = make(map[string]*valueState, len(ms))
	v.byID = make(map[uint64]string, len(ms))
	v.bits = [2][129]int{}
	for i := range ms {
		if d, show := s.toDecision(&ms[i]); show {
			v.upsertLocked(d)
		}
	}
	// No bouncer cursor from before the rebuild may replay the ring.
	v.seq++
	v.base = v.seq
	v.cursor, v.synced = cur, true
}

// bouncer is what one bouncer holds, as far as the server told it.
type bouncer struct {
	cursor   uint64
	held     map[string]sent
	lastPull time.Time
}

// sent is what a bouncer was told about one value: small, because a bouncer
// of a large table holds one per value.
type sent struct {
	id           uint64
	expires      int64 // Unix nanoseconds
	typ          uint8
	rng          bool
	rule, origin string
}

func (d *decision) sent() sent {
	return sent{id: d.id, expires: d.expires.UnixNano(), typ: d.typ, rng: d.rng, rule: d.rule, origin: d.origin}
}

// item is one decision of an answer.
type item struct {
	value string
	sent
}

// streamLocked answers one poll of bouncer name.
func (s *Server) streamLocked(name string, q map[string][]string, now time.Time) ([]byte, error) {
	startup := false
	if v := q["startup"]; len(v) > 0 {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			return nil, fmt.Errorf("startup: %q: want true or false", v[0])
		}
		startup = b
	}
	f := s.parseFilter(q)
	b := s.bouncers[name]
	if b == nil {
		if len(s.bouncers) >= s.maxBncr {
			s.evictBouncerLocked()
		}
		b = &bouncer{}
		s.bouncers[name] = b
		// A bouncer unknown to this process (guardd restarted) that does not
		// ask for startup holds what it was told before: it gets every
		// active decision as new, and what was deleted meanwhile ages out of
		// its sets by the durations it was given.
	}
	fresh := startup || b.held == nil
	if fresh {
		b.held = make(map[string]sent, len(s.view.byValue))
	}
	var added, deleted []item
	if fresh {
		added = make([]item, 0, len(s.view.byValue))
	}
	diff := func(val string) {
		var cur sent
		ok := false
		if st := s.view.byValue[val]; st != nil {
			if w, won := st.winner(now); won && f.match(w) {
				cur, ok = w.sent(), true
			}
		}
		h, had := b.held[val]
		switch {
		case !ok && had:
			deleted = append(deleted, item{val, h})
			delete(b.held, val)
		case ok && !had:
			added = append(added, item{val, cur})
			b.held[val] = cur
		case ok && had && h != cur:
			// Deleted first, then new: bouncers apply deleted before new,
			// and a firewall set does not extend an element's timeout when
			// the element is added again.
			deleted = append(deleted, item{val, h})
			added = append(added, item{val, cur})
			b.held[val] = cur
		}
	}
	if changed, ok := s.view.changedSince(b.cursor); ok && !fresh {
		for val := range changed {
			diff(val)
		}
	} else {
		for val := range b.held {
			if _, ok := s.view.byValue[val]; !ok {
				diff(val)
			}
		}
		for val := range s.view.byValue {
			diff(val)
		}
	}
	b.cursor, b.lastPull = s.view.seq, now
	sortDecisions(added)
	sortDecisions(deleted)
	s.metrics.sentNew.Add(float64(len(added)))
	s.metrics.sentDeleted.Add(float64(len(deleted)))
	size := 64
	for _, l := range [2][]item{added, deleted} {
		for i := range l {
			size += itemSize + len(l[i].value) + len(l[i].rule) + len(l[i].origin)
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"deleted":`...)
	buf = appendDecisions(buf, deleted, now)
	buf = append(buf, `,"new":`...)
	buf = appendDecisions(buf, added, now)
	return append(buf, "}\n"...), nil
}

func (s *Server) evictBouncerLocked() {
	var oldest string
	var t time.Time
	for n, b := range s.bouncers {
		if oldest == "" || b.lastPull.Before(t) {
			oldest, t = n, b.lastPull
		}
	}
	delete(s.bouncers, oldest)
}

func sortDecisions(ds []item) {
	slices.SortFunc(ds, func(a, b item) int {
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
}

// queryLocked answers GET /v1/decisions: the decisions on ip= (and on the
// ranges holding it), range=, or scope= and value=, as the live-mode
// bouncers (nginx, HAProxy) ask. Nothing is the JSON null, as CrowdSec
// answers.
func (s *Server) queryLocked(q map[string][]string, now time.Time) ([]byte, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	contains := true
	if c := get("contains"); c != "" {
		b, err := strconv.ParseBool(c)
		if err != nil {
			return nil, fmt.Errorf("contains: %q: want true or false", c)
		}
		contains = b
	}
	ip, rng := get("ip"), get("range")
	if sc, val := get("scope"), get("value"); val != "" {
		switch {
		case sc == "" || equalFold(sc, "ip"):
			ip = val
		case equalFold(sc, "range"):
			rng = val
		default:
			return []byte("null\n"), nil // no other scope is shown
		}
	}
	typ := get("type")
	var want netip.Prefix
	switch {
	case ip != "":
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("ip: %q: not an address", ip)
		}
		a = a.Unmap().WithZone("")
		want = netip.PrefixFrom(a, a.BitLen())
	case rng != "":
		p, err := netip.ParsePrefix(rng)
		if err != nil {
			return nil, fmt.Errorf("range: %q: not a CIDR", rng)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		want = p.Masked()
	default:
		return nil, fmt.Errorf("want ip=, range=, or scope= and value=")
	}
	var out []item
	add := func(val string) {
		st := s.view.byValue[val]
		if st == nil {
			return
		}
		if w, ok := st.winner(now); ok && (typ == "" || typ == typeNames[w.typ]) {
			out = append(out, item{val, w.sent()})
		}
	}
	if contains {
		// Values holding want: the address itself, then each range length
		// in use, probed by masking (at most 129 map lookups).
		fam := famIdx(want)
		if want.Bits() == want.Addr().BitLen() {
			add(want.Addr().String())
		}
		for bits := want.Bits(); bits >= 0; bits-- {
			if s.view.bits[fam][bits] > 0 {
				add(netip.PrefixFrom(want.Addr(), bits).Masked().String())
			}
		}
	} else {
		for val, st := range s.view.byValue {
			if st.pfx.Addr().BitLen() == want.Addr().BitLen() && want.Contains(st.pfx.Addr()) && st.pfx.Bits() >= want.Bits() {
				add(val)
			}
		}
	}
	if len(out) == 0 {
		return []byte("null\n"), nil
	}
	sortDecisions(out)
	return append(appendDecisions(nil, out, now), '\n'), nil
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// itemSize bounds the bytes appendDecisions writes for one item besides
// its value, rule and origin (members, punctuation, the longest duration,
// id, escapes aside).
const itemSize = 128

// appendDecisions writes ds in CrowdSec's models.Decision shape, members in
// the order CrowdSec writes them, or null for none.
func appendDecisions(b []byte, ds []item, now time.Time) []byte {
	if len(ds) == 0 {
		return append(b, "null"...)
	}
	b = append(b, '[')
	nowNano := now.UnixNano()
	for i := range ds {
		d := &ds[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"duration":"`...)
		b = appendDuration(b, time.Duration(d.expires-nowNano))
		b = append(b, `","id":`...)
		b = strconv.AppendUint(b, d.id, 10)
		b = append(b, `,"origin":`...)
		b = appendJSONString(b, d.origin)
		b = append(b, `,"scenario":`...)
		b = appendJSONString(b, d.rule)
		if d.rng {
			b = append(b, `,"scope":"Range","type":"`...)
		} else {
			b = append(b, `,"scope":"Ip","type":"`...)
		}
		b = append(b, typeNames[d.typ]...)
		b = append(b, `","value":"`...)
		b = append(b, d.value...) // an address or CIDR: no character to escape
		b = append(b, `"}`...)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 written as U+FFFD, and <, >, &
// left alone (this is not HTML).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}

// Len reports how many values bouncers are shown (for tests and status).
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLocked(s.now())
	return len(s.view.byValue)
}

// appendDuration appends d as time.Duration.String writes it, the form
// CrowdSec sends ("3h54m46.438767027s"), without allocating.
func appendDuration(b []byte, d time.Duration) []byte {
	var buf [32]byte
	// Duration.String allocates; the format is reproduced by hand for the
	// common cases and delegated for the rest.
	if d < time.Second && d > -time.Second {
		return append(b, d.String()...)
	}
	w := len(buf)
	u := uint64(d)
	neg := d < 0
	if neg {
		u = -u
	}
	w--
	buf[w] = 's'
	w, u = fmtFrac(buf[:w], u, 9)
	w = fmtInt(buf[:w], u%60)
	u /= 60
	if u > 0 {
		w--
		buf[w] = 'm'
		w = fmtInt(buf[:w], u%60)
		u /= 60
		if u > 0 {
			w--
			buf[w] = 'h'
			w = fmtInt(buf[:w], u)
		}
	}
	if neg {
		w--
		buf[w] = '-'
	}
	return append(b, buf[w:]...)
}

// fmtFrac formats the fraction of v/10**prec (e.g., ".12345") into the tail
// of buf, omitting trailing zeros and the point when the fraction is 0. It
// returns the index where the output begins and v/10**prec.
func fmtFrac(buf []byte, v uint64, prec int) (int, uint64) {
	w := len(buf)
	print := false
	for range prec {
		digit := v % 10
		print = print || digit != 0
		if print {
			w--
			buf[w] = byte(digit) + '0'
		}
		v /= 10
	}
	if print {
		w--
		buf[w] = '.'
	}
	return w, v
}

// fmtInt formats v into the tail of buf and returns where it begins.
func fmtInt(buf []byte, v uint64) int {
	w := len(buf)
	if v == 0 {
		w--
		buf[w] = '0'
	} else {
		for v > 0 {
			w--
			buf[w] = byte(v%10) + '0'
			v /= 10
		}
	}
	return w
}

package mitigation

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/action"
	"github.com/guardd/guardd/characteristics"
)

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("mitigation: store closed")

// Defaults for zero Config fields.
const (
	DefaultMaxEntries = 1_000_000
	DefaultHistory    = 1 << 16
)

// Mitigation is one active decision: enforce Action on requests matching Scope
// until Expires.
//
// Its JSON form (lower snake case, like every JSON guardd writes) is
// {"id","rule","action","scope","created","expires","origin"}.
type Mitigation struct {
	ID      uint64    `json:"id"`      // assigned by the Store, increasing, never reused by one state directory
	Rule    string    `json:"rule"`    // the rule that tripped, or the name given by an operator
	Action  Action    `json:"action"`  //
	Scope   Scope     `json:"scope"`   // canonical (see Canonical)
	Created time.Time `json:"created"` // first Add
	Expires time.Time `json:"expires"` // absolute wall-clock time
	Origin  Origin    `json:"origin"`  // OriginRule (default), OriginManual or OriginAPI
}

// Origin says who made a mitigation. Its values are a closed set; the
// journal, the fleet stream and the JSON APIs carry them as text.
type Origin string

const (
	OriginRule   Origin = "rule"   // a rule tripped
	OriginManual Origin = "manual" // an operator, by name
	OriginAPI    Origin = "api"    // the admin API (guardd decisions, bulk imports)
	// OriginScore: a client's anomaly score reached a threshold (package
	// scoring). Like a manual decision it covers every request of its
	// scope: no rule's mitigation expression narrows it.
	OriginScore Origin = "score"
)

// Valid reports whether o is one of the origins above. The store refuses
// a mitigation of any other (Add, the journal, the fleet stream), so
// nothing downstream meets one.
func (o Origin) Valid() bool {
	switch o {
	case OriginRule, OriginManual, OriginAPI, OriginScore:
		return true
	}
	return false
}

// ParseOrigin reads an origin as the journal, the fleet stream and the JSON
// APIs write it.
func ParseOrigin(s string) (Origin, error) {
	if o := Origin(s); o.Valid() {
		return o, nil
	}
	return "", fmt.Errorf("mitigation: unknown origin %q; expect 'rule', 'manual', 'api' or 'score'", s)
}

// Config configures a Store. The zero value is a usable in-memory store.
type Config struct {
	// MaxEntries caps the number of mitigations held; 0 means
	// DefaultMaxEntries. When full, adding a new mitigation evicts the one
	// nearest to expiry and counts it in guardd_mitigation_evictions_total.
	MaxEntries int
	// StateDir holds the snapshot and journal; "" keeps state in memory only.
	// One process at a time may use a directory (an flock on StateDir/lock).
	StateDir string
	// Allowlist is never mitigated.
	Allowlist Allowlist
	// History is how many changes Changes can replay; 0 means DefaultHistory.
	// A consumer further behind than this resyncs with List.
	History int
	// Now is the wall clock, used to drop expired state at New and by Run;
	// nil means time.Now.
	Now func() time.Time
}

const (
	shardBits = 6
	numShards = 1 << shardBits
)

// shard is one read-mostly slice of the table. Readers take mu shared; the
// single writer (holding Store.mu) takes it exclusively to publish a change.
// Padding keeps two shards' locks off one cache line.
type shard struct {
	mu sync.RWMutex
	m  map[uint64]*node // scope key -> the first mitigation on that scope
	_  [128 - unsafe.Sizeof(sync.RWMutex{}) - unsafe.Sizeof(map[uint64]*node(nil))]byte
}

// node is one held mitigation. The readers' shard map, the writer's indexes
// (byID, the expiry heap) and the change feed all point at the same node, so
// a mitigation is held once: 80 bytes, its scope (the pairs and their values;
// names are shared with the Shape) and a share of an interned rule and
// origin. Times are wall-clock Unix seconds and nanoseconds, packed; the scope
// key is recomputed by the writer when it needs it. A lookup hit costs one
// map probe and one pointer chase; a miss, the common case, only the probe,
// in a map of 8-byte values rather than 128-byte cells (BENCHMARKS.md: bytes
// per mitigation).
//
// Fields the readers see (expiry, action, next) change only under the
// shard's lock; the others are fixed once the node is published.
type node struct {
	id      uint64
	expSec  int64 // Expires, Unix seconds
	crtSec  int64 // Created, Unix seconds
	scope   Scope
	label   *label
	next    *node // another rule's mitigation on the same key
	idx     int32 // position in Store.heap
	expNsec int32
	crtNsec int32
	action  Action
}

// A node must stay 80 bytes (a size class): this fails to compile if it grows.
var _ [80 - unsafe.Sizeof(node{})]byte

// wall is t as the node holds it.
func wall(t time.Time) (int64, int32) { return t.Unix(), int32(t.Nanosecond()) }

// expiresBefore reports whether n's expiry is before the wall time (sec, nsec).
func (n *node) expiresBefore(sec int64, nsec int32) bool {
	return n.expSec < sec || (n.expSec == sec && n.expNsec < nsec)
}

// expiresAfter reports whether n's expiry is after the wall time (sec, nsec).
func (n *node) expiresAfter(sec int64, nsec int32) bool {
	return n.expSec > sec || (n.expSec == sec && n.expNsec > nsec)
}

// label is a rule name and origin, interned: a few rules make most
// mitigations.
type label struct {
	rule   string
	origin Origin
	refs   int
}

func (n *node) mitigation() Mitigation {
	return Mitigation{ID: n.id, Rule: n.label.rule, Action: n.action, Scope: n.scope,
		Created: time.Unix(n.crtSec, int64(n.crtNsec)).UTC(), Expires: time.Unix(n.expSec, int64(n.expNsec)).UTC(), Origin: n.label.origin}
}

// Store is the table of active mitigations. Lookup may run concurrently with
// everything else; writers (Add, Delete, Expire, ...) are serialised.
type Store struct {
	shards [numShards]shard
	n      atomic.Int64
	shapes atomic.Pointer[[]Shape]

	mu         sync.Mutex // serialises writers; guards the fields below
	byID       map[uint64]*node
	labels     map[[2]string]*label // by rule and origin
	heap       expiryHeap
	nextID     uint64
	feed       feed
	shapeRefs  map[string]*shapeRef
	shapeList  []Shape
	journal    *journal // nil without StateDir
	journalErr bool     // an error was logged and nothing succeeded since
	evicted    uint64
	closed     bool

	compactMu sync.Mutex // one compaction at a time

	max   int
	allow atomic.Pointer[allowState]
	met   *metrics
	log   *slog.Logger
	now   func() time.Time
}

// New validates cfg and restores the mitigations of cfg.StateDir that have not
// expired, keeping their absolute expiry (so their remaining time). It starts
// nothing: Run syncs the journal and expires entries, Close flushes. A nil reg
// registers no metrics; a nil log discards.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Store, error) {
	if cfg.MaxEntries < 0 || cfg.MaxEntries > math.MaxInt32 {
		return nil, fmt.Errorf("mitigation: max entries %d: must be positive and at most %d (0 = %d)", cfg.MaxEntries, math.MaxInt32, DefaultMaxEntries)
	}
	if cfg.History < 0 {
		return nil, fmt.Errorf("mitigation: history %d: must be positive (0 = %d)", cfg.History, DefaultHistory)
	}
	allow, err := newAllowState(cfg.Allowlist)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	met, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("mitigation: %w", err)
	}
	s := &Store{
		byID:      make(map[uint64]*node),
		labels:    make(map[[2]string]*label),
		nextID:    1,
		shapeRefs: make(map[string]*shapeRef),
		max:       cmp.Or(cfg.MaxEntries, DefaultMaxEntries),
		met:       met,
		log:       log,
		now:       cfg.Now,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.allow.Store(allow)
	for i := range s.shards {
		s.shards[i].m = make(map[uint64]*node)
	}
	s.shapes.Store(&s.shapeList)
	now := s.now()
	// Cursors start at the wall clock in nanoseconds, so a cursor kept across a
	// restart is older than the new history and forces a resync.
	s.feed.init(cmp.Or(cfg.History, DefaultHistory), uint64(max(now.UnixNano(), 0)))
	if cfg.StateDir == "" {
		return s, nil
	}
	j, st, err := openJournal(cfg.StateDir, log)
	if err != nil {
		return nil, fmt.Errorf("mitigation: %w", err)
	}
	s.journal = j
	s.nextID = max(s.nextID, st.nextID)
	for _, a := range st.setAside {
		s.met.setAside.Inc()
		log.Error("mitigation state file damaged: set aside, starting with the records that could be read; some mitigations may be missing",
			"file", a.path, "set_aside_as", a.to, "bad_lines", a.bad, "first_error", a.first.Error())
	}
	restored := slices.SortedFunc(func(yield func(Mitigation) bool) {
		for _, m := range st.live {
			if !yield(m) {
				return
			}
		}
	}, func(a, b Mitigation) int { return cmp.Compare(a.ID, b.ID) })
	dropped := 0
	s.mu.Lock()
	for _, m := range restored {
		if !m.Expires.After(now) || allow.list.Allows(m.Scope) {
			dropped++
			continue
		}
		s.restoreLocked(m)
	}
	s.mu.Unlock()
	// Rewrite the snapshot when journals were replayed (dropping any damaged
	// tail before new records follow it) or expired entries dropped.
	if j.replayed || dropped > 0 {
		if err := s.compact(false); err != nil {
			j.close()
			return nil, fmt.Errorf("mitigation: %w", err)
		}
	}
	log.Info("mitigation state restored", "dir", cfg.StateDir, "active", s.Len(), "dropped", dropped)
	return s, nil
}

// restoreLocked inserts a mitigation read from the state files, keeping its ID.
// Nothing is journaled or fed: it is already on disk and predates every cursor.
func (s *Store) restoreLocked(m Mitigation) {
	key := m.Scope.Key()
	if n := s.findLocked(key, m.Scope, m.Rule); n != nil {
		if sec, nsec := wall(m.Expires); n.expiresBefore(sec, nsec) {
			sh := s.shardOf(key)
			sh.mu.Lock()
			n.expSec, n.expNsec = sec, nsec
			sh.mu.Unlock()
			heap.Fix(&s.heap, int(n.idx))
		}
		return
	}
	for len(s.byID) >= s.max {
		s.evictLocked()
	}
	s.insertLocked(s.newNodeLocked(m), key)
	s.nextID = max(s.nextID, m.ID+1)
}

// Add records m, or extends the mitigation of the same scope and rule: the
// later expiry wins and the action is replaced by m's. It returns the stored
// mitigation and true, or false with a nil error when the allowlist covers the
// scope. The scope is canonicalised and copied (its strings may alias an
// event's buffers). Created defaults to now and Origin to "rule"; Expires must
// be after now. A failure to persist is logged and counted, and the
// mitigation is held in memory all the same: enforcing matters more than
// surviving a restart.
func (s *Store) Add(m Mitigation, now time.Time) (Mitigation, bool, error) {
	m, err := s.prepare(m, now)
	if err != nil {
		return Mitigation{}, false, fmt.Errorf("mitigation: add: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Mitigation{}, false, ErrClosed
	}
	// Checked under the writer lock, so SetAllowlist cannot slip between
	// the check and the insertion.
	if s.allow.Load().list.Allows(m.Scope) {
		s.met.allowlisted.Inc()
		return Mitigation{}, false, nil
	}
	s.expireLocked(now)
	return s.addLocked(m), true, nil
}

// AddAll adds many mitigations under one lock, as an operator's import does:
// each is validated as Add does first, and nothing is added unless all are
// valid (the error names the index of the first bad one). It returns the
// mitigations held afterwards for those added or extended, in order, and how
// many the allowlist refused.
func (s *Store) AddAll(ms []Mitigation, now time.Time) (held []Mitigation, allowlisted int, err error) {
	ready := make([]Mitigation, 0, len(ms))
	for i, m := range ms {
		m, err := s.prepare(m, now)
		if err != nil {
			return nil, 0, fmt.Errorf("mitigation: add #%d: %w", i+1, err)
		}
		ready = append(ready, m)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, ErrClosed
	}
	s.expireLocked(now)
	allow := s.allow.Load().list
	held = make([]Mitigation, 0, len(ready))
	for _, m := range ready {
		if allow.Allows(m.Scope) {
			s.met.allowlisted.Inc()
			allowlisted++
			continue
		}
		held = append(held, s.addLocked(m))
	}
	return held, allowlisted, nil
}

// addLocked adds a prepared, not allowlisted m, or merges it into the one the
// same rule holds on the same scope.
func (s *Store) addLocked(m Mitigation) Mitigation {
	key := m.Scope.Key()
	if n := s.findLocked(key, m.Scope, m.Rule); n != nil {
		sec, nsec := wall(m.Expires)
		later := n.expiresBefore(sec, nsec)
		if !later && m.Action == n.action {
			return n.mitigation()
		}
		sh := s.shardOf(key)
		sh.mu.Lock()
		if m.Action != n.action {
			s.met.active[n.action].Dec()
			s.met.active[m.Action].Inc()
			n.action = m.Action
		}
		if later {
			n.expSec, n.expNsec = sec, nsec
		}
		sh.mu.Unlock()
		if later {
			heap.Fix(&s.heap, int(n.idx))
		}
		cur := n.mitigation()
		s.persistLocked(record{Op: opAdd, m: cur})
		s.feed.push(change{n: n})
		return cur
	}
	for len(s.byID) >= s.max {
		s.evictLocked()
	}
	m.ID = s.nextID
	s.nextID++
	n := s.newNodeLocked(m)
	s.insertLocked(n, key)
	s.met.added[m.Action].Inc()
	cur := n.mitigation()
	s.persistLocked(record{Op: opAdd, m: cur})
	s.feed.push(change{n: n, created: true})
	return cur
}

// newNodeLocked makes the node of a prepared m, with an interned label.
func (s *Store) newNodeLocked(m Mitigation) *node {
	l := s.labels[[2]string{m.Rule, string(m.Origin)}]
	if l == nil {
		// Copies: m's strings may alias an event's buffers.
		l = &label{rule: strings.Clone(m.Rule), origin: Origin(strings.Clone(string(m.Origin)))}
		s.labels[[2]string{l.rule, string(l.origin)}] = l
	}
	l.refs++
	n := &node{id: m.ID, scope: m.Scope, label: l, action: m.Action}
	n.expSec, n.expNsec = wall(m.Expires)
	n.crtSec, n.crtNsec = wall(m.Created)
	return n
}

func (s *Store) releaseLabelLocked(l *label) {
	if l.refs--; l.refs == 0 {
		delete(s.labels, [2]string{l.rule, string(l.origin)})
	}
}

func (s *Store) shardOf(key uint64) *shard { return &s.shards[key>>(64-shardBits)] }

func (s *Store) prepare(m Mitigation, now time.Time) (Mitigation, error) {
	if !m.Action.Valid() {
		return m, fmt.Errorf("invalid action %d; expect %s", uint8(m.Action), action.Accepted())
	}
	if !m.Action.Mitigates() {
		return m, fmt.Errorf("action %s is decided per request, never a mitigation", m.Action)
	}
	if m.Origin == "" {
		m.Origin = OriginRule
	}
	if !m.Origin.Valid() {
		return m, fmt.Errorf("unknown origin %q; expect 'rule', 'manual', 'api' or 'score'", m.Origin)
	}
	if m.Rule == "" && m.Origin == OriginRule {
		return m, errors.New("no rule name")
	}
	// Wall clock only, in UTC: expiry is absolute and must survive a restart.
	m.Expires = m.Expires.Round(0).UTC()
	if m.Expires.IsZero() || !m.Expires.After(now) {
		return m, fmt.Errorf("scope %s: expiry %s is not after now (%s)", m.Scope, m.Expires.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if m.Expires.Year() > 9999 {
		return m, fmt.Errorf("scope %s: expiry %s is past year 9999", m.Scope, m.Expires)
	}
	sc, err := Canonical(m.Scope)
	if err != nil {
		return m, err
	}
	m.Scope = sc
	if m.Created.IsZero() {
		m.Created = now
	}
	m.Created = m.Created.Round(0).UTC()
	m.ID = 0
	return m, nil
}

// Lookup returns the mitigation on the scope whose Key is key, unexpired at
// now. When several rules mitigate one scope, the strongest action wins (log <
// rate_limit < shadowban < block < firewall), then the later expiry. It does
// not allocate and runs concurrently with writers.
//
// The returned Scope is shared with the store: do not modify it (the same
// holds for List, Snapshot and Changes).
//
// A key is a 64-bit hash: two different scopes with one key (odds about
// n/2^64 per lookup for n entries) would share their mitigations. Callers that
// hold the scope can confirm with Scope.Equal.
func (s *Store) Lookup(key uint64, now time.Time) (Mitigation, bool) {
	sh := s.shardOf(key)
	sec, nsec := wall(now)
	sh.mu.RLock()
	var best *node
	for n := sh.m[key]; n != nil; n = n.next {
		if n.expiresAfter(sec, nsec) && (best == nil || stronger(n, best)) {
			best = n
		}
	}
	if best == nil {
		sh.mu.RUnlock()
		return Mitigation{}, false
	}
	m := best.mitigation()
	sh.mu.RUnlock()
	return m, true
}

// LookupAll appends to dst every mitigation on the scope whose Key is key,
// unexpired at now, one per rule, and returns dst: the decision API's
// verdict weighs each rule's mitigation against its mitigation expression,
// so the strongest alone (Lookup) is not enough. It allocates nothing once
// dst has grown and runs concurrently with writers; the Scopes are shared
// as Lookup's are.
func (s *Store) LookupAll(key uint64, now time.Time, dst []Mitigation) []Mitigation {
	sh := s.shardOf(key)
	sec, nsec := wall(now)
	sh.mu.RLock()
	for n := sh.m[key]; n != nil; n = n.next {
		if n.expiresAfter(sec, nsec) {
			dst = append(dst, n.mitigation())
		}
	}
	sh.mu.RUnlock()
	return dst
}

func stronger(a, b *node) bool {
	if a.action.Stronger(b.action) {
		return true
	}
	if b.action.Stronger(a.action) {
		return false
	}
	return a.expiresAfter(b.expSec, b.expNsec)
}

// allowState is the allowlist in force: as configured (canonical) and
// compiled for Allowlisted.
type allowState struct {
	list  Allowlist
	match *eventMatcher
}

func newAllowState(a Allowlist) (*allowState, error) {
	list, err := a.canonical()
	if err != nil {
		return nil, fmt.Errorf("mitigation: %w", err)
	}
	match, err := list.compile()
	if err != nil {
		return nil, fmt.Errorf("mitigation: %w", err)
	}
	return &allowState{list: list, match: match}, nil
}

// Allowlisted reports whether e's client is allowlisted: its address lies in
// an allowlisted network, or its request holds an allowlisted value. An
// enforcement point gives such a request no action, whatever the mitigations
// its keys find: Add refuses scopes the allowlist covers, but a mitigation on
// a country, an ASN, a user agent or a cookie also covers allowlisted
// clients. It does not allocate and runs concurrently with everything.
func (s *Store) Allowlisted(e *characteristics.Event) bool {
	return s.allow.Load().match.matches(e)
}

// SetAllowlist replaces the allowlist (after a reload) and removes the held
// mitigations the new one covers, as Delete does. On error the allowlist in
// force is kept.
func (s *Store) SetAllowlist(a Allowlist) error {
	st, err := newAllowState(a)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allow.Store(st)
	var drop []*node
	for _, n := range s.byID {
		if st.list.Allows(n.scope) {
			drop = append(drop, n)
		}
	}
	for _, n := range drop {
		s.removeLocked(n)
		s.persistLocked(record{Op: opDel, m: Mitigation{ID: n.id}})
	}
	if len(drop) > 0 {
		s.log.Info("mitigations removed: the new allowlist covers them", "removed", len(drop))
	}
	return nil
}

// Delete removes the mitigation with the given ID, reporting whether it was
// held.
func (s *Store) Delete(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return false
	}
	s.removeLocked(e)
	s.persistLocked(record{Op: opDel, m: Mitigation{ID: id}})
	return true
}

// Expire removes the mitigations whose expiry is not after now and returns how
// many. Lookup already ignores them; Expire frees them and feeds their deletion
// to Changes. Run calls it every 100 ms.
func (s *Store) Expire(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expireLocked(now)
}

func (s *Store) expireLocked(now time.Time) int {
	n := 0
	sec, nsec := wall(now)
	for len(s.heap) > 0 && !s.heap[0].expiresAfter(sec, nsec) {
		// Not journaled: a restart drops it by its expiry anyway.
		s.removeLocked(s.heap[0])
		n++
	}
	return n
}

func (s *Store) evictLocked() {
	e := s.heap[0]
	s.removeLocked(e)
	s.persistLocked(record{Op: opDel, m: Mitigation{ID: e.id}})
	s.met.evictions.Inc()
	s.evicted++
	if s.evicted&(s.evicted-1) == 0 { // 1, 2, 4, 8 ...: visible without flooding
		s.log.Warn("mitigation table full, evicting the mitigation nearest to expiry",
			"max_entries", s.max, "evicted_total", s.evicted, "rule", e.label.rule, "expires", time.Unix(e.expSec, int64(e.expNsec)).UTC())
	}
}

// List returns the mitigations unexpired at now, by increasing ID.
func (s *Store) List(now time.Time) []Mitigation {
	l, _ := s.Snapshot(now)
	return l
}

// Snapshot returns what List returns and the Changes cursor at that instant,
// so a consumer can start a feed without missing or replaying anything.
func (s *Store) Snapshot(now time.Time) ([]Mitigation, uint64) {
	s.mu.Lock()
	out := make([]Mitigation, 0, len(s.byID))
	sec, nsec := wall(now)
	for _, n := range s.byID {
		if n.expiresAfter(sec, nsec) {
			out = append(out, n.mitigation())
		}
	}
	cursor := s.feed.seq
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Mitigation) int { return cmp.Compare(a.ID, b.ID) })
	return out, cursor
}

// Len returns the number of mitigations held, including expired ones that
// Expire has not removed yet.
func (s *Store) Len() int { return int(s.n.Load()) }

// Changes returns what changed after cursor since: added holds mitigations
// created or modified (extended expiry, new action), in their latest form;
// deleted holds those deleted, evicted or expired. Apply added as upserts by ID
// and deleted as removals by ID to a state synced at since, and you have the
// state at cursor. A mitigation both created and removed after since appears in
// neither list. ok is false when since is older than the retained history or
// not a cursor of this process (cursors do not survive a restart): then call
// Snapshot (or List) and continue from its cursor.
func (s *Store) Changes(since uint64) (added, deleted []Mitigation, cursor uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feed.since(since)
}

// Shape is the characteristic list of held scopes, e.g. [ip.src] or
// [http.cookies["session"] http.path]: a key an enforcement point must
// compute for each request.
//
// A shape the store lists for scopes holding ip.src.prefix also carries the
// held prefixes' length and family (Prefix): its Key masks the event's
// address to that length rather than reading the event's own prefix, so a
// manual ban of 198.18.0.0/16 or 2001:db8::/32 matches every address inside
// it whatever prefix length the enricher is set to. The store lists one
// shape per length in use.
type Shape struct {
	Names           []string // canonical, in scope order
	Characteristics []characteristics.Characteristic
	// Prefix is, for a shape holding ip.src.prefix, the held prefixes'
	// length and address family (as a masked prefix of the zero address of
	// that family, e.g. 0.0.0.0/16); invalid when the shape uses the event's
	// own ip.src.prefix, as shapes from NewShape do.
	Prefix   netip.Prefix
	prefixes [][]byte // per name: its uvarint length and the name, as Key hashes them
	filter   *prefixFilter
}

// NewShape parses a list of characteristic names into a Shape.
func NewShape(names []string) (Shape, error) {
	sh := Shape{Names: make([]string, len(names))}
	for i, n := range names {
		c, err := characteristics.Parse(n)
		if err != nil {
			return Shape{}, fmt.Errorf("mitigation: shape: %w", err)
		}
		sh.Names[i] = c.String()
		sh.Characteristics = append(sh.Characteristics, c)
		sh.prefixes = append(sh.prefixes, binary.AppendUvarint(nil, uint64(len(sh.Names[i]))))
		sh.prefixes[i] = append(sh.prefixes[i], sh.Names[i]...)
	}
	return sh, nil
}

// shapeOf returns the shape of a canonical scope: its names and, when it
// holds ip.src.prefix, that prefix's length and family.
func shapeOf(sc Scope) (Shape, error) {
	sh, err := NewShape(sc.Names())
	if err != nil {
		return Shape{}, err
	}
	for _, p := range sc {
		if p.Name == namePrefix {
			pfx, err := netip.ParsePrefix(p.Value)
			if err != nil {
				return Shape{}, fmt.Errorf("mitigation: shape: %s: %w", namePrefix, err)
			}
			zero := netip.IPv4Unspecified()
			if pfx.Addr().Is6() {
				zero = netip.IPv6Unspecified()
			}
			sh.Prefix = netip.PrefixFrom(zero, pfx.Bits())
			if pfx.Bits() > 0 {
				sh.filter = &prefixFilter{bits: min(pfx.Bits(), 64)}
			}
		}
	}
	return sh, nil
}

// prefixFilter is what a shape holding ip.src.prefix knows of its held
// prefixes without a key: how many fall in each of 4096 buckets of their
// leading bits. A request whose address lands in an empty bucket cannot match
// the shape, so Key skips it without formatting, hashing or probing: with
// bans of many prefix lengths, most requests pay one atomic load per length
// (BenchmarkDecidePrefixes). Counts change under the store's writer lock;
// readers load them atomically.
type prefixFilter struct {
	bits   int // leading bits that place an address: the prefix length, at most 64
	counts [prefixFilterBuckets]atomic.Int32
}

const prefixFilterBuckets = 4096

func (f *prefixFilter) bucket(a netip.Addr) int {
	var top uint64
	if a.Is4() {
		b := a.As4()
		top = uint64(binary.BigEndian.Uint32(b[:])) << 32
	} else {
		b := a.As16()
		top = binary.BigEndian.Uint64(b[:8])
	}
	top &= ^uint64(0) << (64 - f.bits)
	return int((top * 0x9e3779b97f4a7c15) >> (64 - 12)) // Fibonacci hashing into 4096
}

// may reports whether a held prefix of the shape can hold a.
func (f *prefixFilter) may(a netip.Addr) bool { return f.counts[f.bucket(a)].Load() > 0 }

// count adds d to the bucket of sc's ip.src.prefix. A nil filter ignores it.
func (f *prefixFilter) count(sc Scope, d int32) {
	if f == nil {
		return
	}
	for _, p := range sc {
		if p.Name == namePrefix {
			if pfx, err := netip.ParsePrefix(p.Value); err == nil {
				f.counts[f.bucket(pfx.Addr())].Add(d)
			}
		}
	}
}

// shapeID names a scope's shape: its names and, for ip.src.prefix, the
// prefix length and family (the shape's Prefix).
func shapeID(sc Scope) string {
	var b []byte
	for i, p := range sc {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p.Name...)
		if p.Name == namePrefix {
			if pfx, err := netip.ParsePrefix(p.Value); err == nil {
				b = append(b, 1)
				if pfx.Addr().Is6() {
					b = append(b, '6')
				} else {
					b = append(b, '4')
				}
				b = strconv.AppendInt(b, int64(pfx.Bits()), 10)
			}
		}
	}
	return string(b)
}

// Key computes the key of e's values for this shape (equal to Scope.Key of
// the same pairs), using buf as scratch; buf is returned, possibly grown, for
// reuse. ok is false when e lacks one of the characteristics (no scope holds
// an empty value), when the shape's Prefix is of the other address family
// than e's address, or when no prefix the store holds for this shape can
// hold e's address (see prefixFilter). It does not allocate once buf is large enough: the
// canonical bytes are laid out in buf and hashed once.
func (sh Shape) Key(e *characteristics.Event, buf []byte) (key uint64, _ []byte, ok bool) {
	if len(sh.prefixes) != len(sh.Characteristics) {
		return 0, buf, false // not made by NewShape
	}
	if sh.filter != nil { // before any work: most requests stop here
		a := e.IP.Unmap()
		if !a.IsValid() || a.Is4() != sh.Prefix.Addr().Is4() || !sh.filter.may(a) {
			return 0, buf, false
		}
	}
	buf = buf[:0]
	for i, c := range sh.Characteristics {
		buf = append(buf, sh.prefixes[i]...)
		start := len(buf)
		if c.Kind() == characteristics.KindPrefix && sh.Prefix.IsValid() {
			a := e.IP.Unmap()
			if !a.IsValid() || a.Is4() != sh.Prefix.Addr().Is4() {
				return 0, buf, false
			}
			p, _ := a.WithZone("").Prefix(sh.Prefix.Bits())
			buf = p.AppendTo(buf)
		} else {
			buf = c.AppendValue(buf, e)
		}
		n := len(buf) - start
		if n == 0 {
			return 0, buf, false
		}
		// Put the value's length in front of it.
		var lb [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(lb[:], uint64(n))
		buf = append(buf, lb[:k]...)
		copy(buf[start+k:], buf[start:start+n])
		copy(buf[start:], lb[:k])
	}
	return xxhash.Sum64(buf), buf, true
}

// Shapes returns the distinct shapes of the scopes held, sorted by names. The
// result is shared and must not be modified; it is replaced, not changed, when
// the set of shapes changes. It does not allocate.
func (s *Store) Shapes() []Shape { return *s.shapes.Load() }

// findLocked returns the node of (scope, rule), or nil.
func (s *Store) findLocked(key uint64, sc Scope, rule string) *node {
	for n := s.shardOf(key).m[key]; n != nil; n = n.next {
		if n.label.rule == rule && n.scope.Equal(sc) {
			return n
		}
	}
	return nil
}

// insertLocked indexes n and publishes it to readers, after the other
// mitigations on its key.
func (s *Store) insertLocked(n *node, key uint64) {
	if r := s.shapeRefLocked(n.scope, +1); r != nil {
		for i := range n.scope {
			n.scope[i].Name = r.shape.Names[i] // one copy of each name
		}
		r.shape.filter.count(n.scope, +1) // before readers can find n
	}
	s.byID[n.id] = n
	heap.Push(&s.heap, n)
	sh := s.shardOf(key)
	sh.mu.Lock()
	if first := sh.m[key]; first == nil {
		sh.m[key] = n
	} else {
		last := first
		for last.next != nil {
			last = last.next
		}
		last.next = n
	}
	sh.mu.Unlock()
	s.n.Add(1)
	s.met.active[n.action].Inc()
}

// removeLocked drops n from every index and feeds its deletion.
func (s *Store) removeLocked(n *node) {
	heap.Remove(&s.heap, int(n.idx))
	delete(s.byID, n.id)
	key := n.scope.Key()
	sh := s.shardOf(key)
	sh.mu.Lock()
	if first := sh.m[key]; first == n {
		if n.next == nil {
			delete(sh.m, key)
		} else {
			sh.m[key] = n.next
		}
	} else {
		for p := first; p != nil; p = p.next {
			if p.next == n {
				p.next = n.next
				break
			}
		}
	}
	n.next = nil
	sh.mu.Unlock()
	s.n.Add(-1)
	s.met.active[n.action].Dec()
	if r := s.shapeRefs[shapeID(n.scope)]; r != nil {
		r.shape.filter.count(n.scope, -1) // after readers lost n
	}
	s.shapeRefLocked(n.scope, -1)
	s.releaseLabelLocked(n.label)
	s.feed.push(change{n: n, deleted: true})
}

// shapeRefLocked counts d more (or fewer) held scopes of sc's shape and
// returns its record, nil once it holds none.
func (s *Store) shapeRefLocked(sc Scope, d int) *shapeRef {
	k := shapeID(sc)
	r := s.shapeRefs[k]
	switch {
	case r != nil && r.n+d > 0:
		r.n += d
		return r
	case r != nil:
		delete(s.shapeRefs, k)
		r = nil
	case d <= 0:
		return nil
	default:
		sh, err := shapeOf(sc)
		if err != nil { // cannot happen: held scopes are canonical
			s.log.Error("mitigation: held scope names do not parse", "err", err)
			return nil
		}
		r = &shapeRef{n: d, shape: sh}
		s.shapeRefs[k] = r
	}
	// The set changed: publish a new list, leaving the old one to its readers.
	list := make([]Shape, 0, len(s.shapeRefs))
	for _, r := range s.shapeRefs {
		list = append(list, r.shape)
	}
	slices.SortFunc(list, func(a, b Shape) int {
		if c := slices.Compare(a.Names, b.Names); c != 0 {
			return c
		}
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	s.shapes.Store(&list)
	return r
}

// shapeRef counts the held scopes of one shape.
type shapeRef struct {
	n     int
	shape Shape
}

// persistLocked appends r to the journal; a failure is logged once until the
// next success and counted.
func (s *Store) persistLocked(r record) {
	if s.journal == nil || s.closed {
		return
	}
	if err := s.journal.append(r); err != nil {
		s.met.journalErrors.Inc()
		if !s.journalErr {
			s.log.Error("mitigation journal write failed; mitigations stay enforced but may not survive a restart", "err", err)
			s.journalErr = true
		}
		return
	}
	s.journalErr = false
}

// Sync makes the journal durable (fsync). Run calls it every 100 ms; writes
// reach the kernel at once, so a crashed process loses nothing, and a power
// loss at most the last interval.
func (s *Store) Sync() error {
	s.mu.Lock()
	var f *os.File
	if j := s.journal; j != nil && j.dirty {
		f, j.dirty = j.f, false
	}
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	// A rotation may close f meanwhile; it syncs before closing.
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		s.met.journalErrors.Inc()
		s.mu.Lock()
		s.journal.dirty = true
		s.mu.Unlock()
		return fmt.Errorf("mitigation: journal sync: %w", err)
	}
	return nil
}

// Run expires mitigations and syncs the journal every 100 ms, and compacts
// the journal into a snapshot when it has grown past twice the live entries
// (and at least 4096 records). It returns nil when ctx ends; call Close after.
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		s.Expire(s.now())
		if err := s.Sync(); err != nil {
			s.log.Error("mitigation journal sync failed", "err", err)
		}
		if s.needCompact() {
			if err := s.compact(false); err != nil {
				s.met.journalErrors.Inc()
				s.log.Error("mitigation journal compaction failed", "err", err)
			}
		}
	}
}

func (s *Store) needCompact() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.journal != nil && !s.closed && s.journal.records >= max(4096, 2*len(s.byID))
}

// compact writes a snapshot of the live state and drops the journals it
// covers. The state is copied and the journal rotated under the lock; the
// snapshot is written outside it, so Add waits only for the copy.
func (s *Store) compact(final bool) error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.mu.Lock()
	if s.journal == nil {
		s.mu.Unlock()
		return nil
	}
	live := make([]Mitigation, 0, len(s.byID))
	for _, n := range s.byID {
		live = append(live, n.mitigation())
	}
	nextID := s.nextID
	j := s.journal
	upto, err := j.rotate(!final)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	slices.SortFunc(live, func(a, b Mitigation) int { return cmp.Compare(a.ID, b.ID) })
	return j.writeSnapshot(live, nextID, upto)
}

// Close writes a final snapshot and releases the state directory. Later calls
// to Add return ErrClosed; Lookup keeps answering from memory. Close is safe
// to repeat.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	err := s.compact(true)
	if cerr := s.journal.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mitigation: close: %w", err)
	}
	return nil
}

// expiryHeap is a min-heap of nodes by expiry, then ID.
type expiryHeap []*node

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	if h[i].expSec != h[j].expSec || h[i].expNsec != h[j].expNsec {
		return h[j].expiresAfter(h[i].expSec, h[i].expNsec)
	}
	return h[i].id < h[j].id
}
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = int32(i), int32(j)
}
func (h *expiryHeap) Push(x any) {
	n := x.(*node)
	n.idx = int32(len(*h))
	*h = append(*h, n)
}
func (h *expiryHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return n
}

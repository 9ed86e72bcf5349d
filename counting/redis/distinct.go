package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/guardd/guardd/counting"
	"github.com/prometheus/client_golang/prometheus"
)

// Fleet-wide distinct counts (docs/fleet.md "Distinct counts").
//
// Each node keeps its rule's counting.Distinct and counts every event
// there, as without a fleet. The fleet loop sends, every FlushInterval,
// the sketch of each window a key's local values changed (counting.Sketch:
// up to 32 fingerprints, 128 HyperLogLog registers beyond) to Redis, where
// one script per key merges it into the fleet's sketch of that window
// (a union of fingerprints, a maximum of registers: idempotent, so a
// retried merge counts nothing twice) and answers with the merged sketch.
// When the fleet's sketches hold values the local ones do not, the node
// keeps the union of both (the key's view) and adds each new value to it:
// the key's result is then what one node that saw every node's events
// would answer, a flush interval late. Keys near their limit are read
// back at each flush while they are in use, even without new values
// here.

// DistinctRule is one distinct rule of the fleet: it names the rule in
// Redis keys ("guardd:{<name>:<key>}:d<window>").
type DistinctRule struct {
	Name string
}

// DistinctConfig bounds a DistinctCounter. Zero values mean defaults.
type DistinctConfig struct {
	// MaxKeys caps the keys whose fleet state the node keeps (450 to 550
	// bytes each, measured); 0 means DefaultDistinctKeys. Beyond it, the least
	// recently used key of a shard (sampled) is dropped and answers from
	// local counts until it is shared again.
	MaxKeys int
	// MaxPerFlush caps the keys one flush sends or reads per rule (reads
	// at most an eighth of it); 0 means DefaultDistinctPerFlush. Keys
	// beyond wait for the next flush.
	MaxPerFlush int
}

// Defaults of DistinctConfig.
const (
	DefaultDistinctKeys     = 1 << 17
	DefaultDistinctPerFlush = 1024
	// distinctRefresh: a key near its limit is read back at every flush
	// while its last local event is within this many flush intervals.
	distinctRefresh = 20
	distinctShards  = 16
)

// DistinctCounter is one distinct rule's fleet-wide counter: the engine's
// DistinctCounter. AddDistinct counts in the local table and answers from
// the union of the local sketches and the fleet's last read back: it
// never waits on the network, and while Redis is away the answer is the
// local count (with whatever the fleet had said of the key's windows).
// Safe for concurrent use.
type DistinctCounter struct {
	f       *Fleet
	rule    DistinctRule
	local   *counting.Distinct
	prefix  string // "guardd:{<name>:"
	period  int64
	perFlsh int
	pass    atomic.Uint64 // collect passes
	keys    counting.Sharded[dfkey, int32, dfext]
}

// dfshard is one shard of a DistinctCounter's keys: the counting.Sharded
// table the local tables use, each key's dfkey in the array that probing
// reads (56 bytes a slot with the key) and, in the second array, the index
// of its dfview in the shard's views, which do not move when slots do and
// take no room in the slots that are empty (a view is 320 bytes). A slot
// moves when its shard grows or a key before it is deleted: a flush keeps
// the key and its generation, and looks the key up again to settle it.
type dfshard = counting.Shard[dfkey, int32, dfext]

// dfext is what a shard holds beside its keys.
type dfext struct {
	touched []uint64 // keys to look at in the next flush, each once
	views   []dfview // at each key's index, stable
	vfree   []int32  // indexes of views no key holds
	gen     uint32   // generations handed out
}

// newLocked gives the new key in slot i a generation and an empty view.
func newLocked(sh *dfshard, i int) {
	e := &sh.Ext
	var vi int32
	if n := len(e.vfree); n > 0 {
		vi, e.vfree = e.vfree[n-1], e.vfree[:n-1]
		e.views[vi] = dfview{}
	} else {
		e.views = append(e.views, dfview{})
		vi = int32(len(e.views) - 1)
	}
	*sh.Side(i) = vi
	e.gen++
	sh.Val(i).gen = e.gen
}

// viewOf returns the view of the key in slot i.
func viewOf(sh *dfshard, i int) *dfview { return &sh.Ext.views[*sh.Side(i)] }

// releaseLocked frees the view of the key in slot i, before the slot is
// deleted, and returns i.
func releaseLocked(sh *dfshard, i int) int {
	sh.Ext.vfree = append(sh.Ext.vfree, *sh.Side(i))
	return i
}

// dfkey is what every AddDistinct reads of one key; dfview, in the slot's
// second array, what the node knows of the key fleet-wide: while the
// fleet's sketches hold values the local table does not (dfAdds), the
// view, the union of both, kept up to date by AddDistinct as the local
// table is. Only those keys' AddDistinct reads it.
type dfkey struct {
	last   int64     // event time of the last local Add (ns)
	seen   int64     // when Redis last answered for it (ns); 0: never
	rwin   int64     // the window of recent
	recent [4]uint32 // a few values of window rwin added here, to tell repeats cheaply
	gen    uint32    // tells this key's entry from one made later for the same key
	rn     uint8
	flags  uint8
}

type dfview struct {
	vstart     int64              // start of view[0]'s window (unix ns); 0: none
	vcur, vuni float64            // view's estimates: its current window, both
	view       [2]counting.Sketch // windows vstart and vstart-period
	sent       [2]sentMark        // what was last sent of each of the two windows
}

const (
	dfTouched uint8 = 1 << iota // on its shard's touched list
	dfAdds                      // the fleet's sketches hold values the local table did not, at the last reply
	dfFlying                    // an op of it is in flight
	dfChanged                   // a value not in recent was added here since its last send
)

type sentMark struct {
	win int64
	sum uint64
}

// Distinct returns the fleet-wide counter of a distinct rule whose local
// table is local. Each call makes a new counter (a reload makes a new
// local table); one nobody references leaves the flush loop once the
// garbage collector has freed it.
func (f *Fleet) Distinct(r DistinctRule, local *counting.Distinct, cfg DistinctConfig) (*DistinctCounter, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	if local == nil {
		return nil, fmt.Errorf("counting/redis: distinct rule %s: no local table", r.Name)
	}
	if cfg.MaxKeys < 0 || cfg.MaxPerFlush < 0 {
		return nil, fmt.Errorf("counting/redis: distinct rule %s: max keys %d, max per flush %d: must be >= 0", r.Name, cfg.MaxKeys, cfg.MaxPerFlush)
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultDistinctKeys
	}
	if cfg.MaxPerFlush == 0 {
		cfg.MaxPerFlush = DefaultDistinctPerFlush
	}
	c := &DistinctCounter{f: f, rule: r, local: local, prefix: "guardd:{" + r.Name + ":", period: local.Period(),
		perFlsh: cfg.MaxPerFlush}
	c.keys.Init(distinctShards, cfg.MaxKeys/distinctShards)
	f.dist.mu.Lock()
	f.dist.counters = append(f.dist.counters, weak.Make(c))
	f.dist.mu.Unlock()
	return c, nil
}

// Local returns the counter's local table.
func (c *DistinctCounter) Local() *counting.Distinct { return c.local }

// AddDistinct records value for key at now (unix ns) in the local table
// and returns the key's estimate of distinct values fleet-wide: the union
// of the local sketches and the fleet's as last read back. It allocates
// nothing once the key's shard has grown to hold it.
func (c *DistinctCounter) AddDistinct(key, value uint64, now int64) counting.Result {
	r := c.local.Add(key, value, now)
	sh, key, hash := c.keys.Place(key)
	sh.Lock()
	defer sh.Unlock()
	i, found := sh.Claim(key, hash)
	if i < 0 {
		i = sh.Make(key, func() int { return c.victimLocked(sh) })
	}
	if i < 0 {
		return r // no room: the local count
	}
	if !found {
		newLocked(sh, i)
	}
	k := sh.Val(i)
	k.last = max(k.last, now)
	// A repeat of a value added here lately changes no sketch: most events
	// cost the flush nothing. Anything else may, and is looked at.
	ws := c.local.WindowStart(now)
	if ws != k.rwin || !k.holdsRecent(value) {
		if ws > k.rwin {
			k.rwin, k.recent, k.rn = ws, [4]uint32{}, 0
		}
		if ws == k.rwin {
			k.recent[k.rn&3] = recentFP(value)
			k.rn++
		}
		k.flags |= dfChanged
		touchLocked(sh, key, k)
	} else if k.flags&dfTouched == 0 && now-k.seen >= distinctRefresh*int64(c.f.cfg.FlushInterval) {
		touchLocked(sh, key, k) // in use, and what the fleet said of it is old: a flush sees whether to read it
	}
	if k.flags&dfAdds == 0 {
		return r // the fleet knows nothing the local table does not
	}
	v := viewOf(sh, i)
	c.insertLocked(k, v, value, ws)
	return c.local.ResultOf(v.vstart, v.vcur, v.vuni, now)
}

// recentFP is a value's mark in dfkey.recent, from all its bits (a
// caller's values need not be hashes); never 0 (an empty entry).
func recentFP(value uint64) uint32 { return uint32(value*0x9e3779b97f4a7c15>>32) | 1 }

func (k *dfkey) holdsRecent(value uint64) bool {
	f := recentFP(value)
	return k.recent[0] == f || k.recent[1] == f || k.recent[2] == f || k.recent[3] == f
}

// touchLocked lists key, whose entry is k, for the next flush.
func touchLocked(sh *dfshard, key uint64, k *dfkey) {
	if k.flags&dfTouched == 0 {
		k.flags |= dfTouched
		sh.Ext.touched = append(sh.Ext.touched, key)
	}
}

// insertLocked adds value to k's view in the window starting at ws,
// moving its windows as the local table does.
func (c *DistinctCounter) insertLocked(k *dfkey, v *dfview, value uint64, ws int64) {
	w := 0
	switch {
	case ws == v.vstart:
	case ws == v.vstart-c.period:
		w = 1 // a late event, in the previous window
	case ws < v.vstart:
		return // older than both windows: the local table ignores it too
	case ws == v.vstart+c.period:
		v.view[1], v.view[0], v.vstart = v.view[0], counting.Sketch{}, ws
		v.estimate()
	default:
		// Nothing of the view is left in the period: the local table
		// says it all until the fleet answers again.
		v.view, v.vstart, v.vcur, v.vuni = [2]counting.Sketch{}, ws, 0, 0
		k.flags &^= dfAdds
		return
	}
	if v.view[w].Insert(value) {
		v.estimate()
	}
}

func (v *dfview) estimate() {
	v.vcur, v.vuni = v.view[0].Estimate(), v.view[0].UnionEstimate(&v.view[1])
}

// Peek returns key's fleet-wide estimate at now without recording
// anything.
func (c *DistinctCounter) Peek(key uint64, now int64) counting.Result {
	sh, k, _ := c.keys.Place(key)
	sh.Lock()
	defer sh.Unlock()
	if i := sh.Lookup(k); i >= 0 && sh.Val(i).flags&dfAdds != 0 {
		v := viewOf(sh, i)
		if c.local.WindowStart(now) < v.vstart+2*c.period {
			return c.local.ResultOf(v.vstart, v.vcur, v.vuni, now)
		}
	}
	return c.local.Peek(key, now)
}

// victimLocked picks the key a full shard drops: the least recently used
// of a sample.
func (c *DistinctCounter) victimLocked(sh *dfshard) int {
	victim, oldest := -1, int64(0)
	for i, k := range sh.Sample() {
		if victim < 0 || k.last < oldest {
			victim, oldest = i, k.last
		}
	}
	if victim < 0 {
		return -1
	}
	c.f.dist.met.evicted.Inc()
	return releaseLocked(sh, victim)
}

// Len returns the keys whose fleet state the node keeps.
func (c *DistinctCounter) Len() int { return c.keys.Len() }

// SketchOp is one key's exchange with Redis in a flush: the key's
// sketches of two windows, each merged into the fleet's (an empty one is
// only read), and the fleet's merged sketches read back.
type SketchOp struct {
	Key  [2]string // the windows' keys, on one slot ("guardd:{rule:key}:d<window>")
	Send [2][]byte // counting.Sketch binary forms; nil: read only
	TTL  int64     // ms a written sketch is kept: two periods
}

// SketchStore is implemented by a Store that merges distinct sketches
// (*Conn does). With a Store that does not, distinct rules count per node.
type SketchStore interface {
	// MergeSketches runs one merge script per op, pipelined, and stores
	// the fleet's two merged sketches of each op in replies (as long as
	// ops) or its error in errs; it returns the first error.
	MergeSketches(ctx context.Context, ops []SketchOp, replies [][2][]byte, errs []error) error
}

// distinctTier is the Fleet's part for distinct rules.
type distinctTier struct {
	met      *distinctMetrics
	mu       sync.Mutex
	counters []weak.Pointer[DistinctCounter]
}

func (d *distinctTier) live() []*DistinctCounter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return liveOf(&d.counters)
}

// runDistinct flushes the distinct counters every FlushInterval until ctx
// ends, in its own goroutine (a slow merge never delays the counters'
// flush, nor the reverse); the returned func waits for it.
func (f *Fleet) runDistinct(ctx context.Context) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(f.cfg.FlushInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.FlushDistinct(ctx)
			}
		}
	}()
	return func() { <-done }
}

// dref ties an op to its key's entry.
type dref struct {
	c     *DistinctCounter
	key   uint64
	gen   uint32
	win   int64 // start of the current window when sent
	sums  [2]sentMark
	bytes int
	wrote bool // Send holds a sketch (else the op only reads)
}

// FlushDistinct sends the sketches of the keys whose local values changed
// since the last flush, reads back those near their limit, and keeps the
// fleet's answer. Run calls it every FlushInterval; tests may too.
func (f *Fleet) FlushDistinct(ctx context.Context) {
	ss, ok := f.store.(SketchStore)
	if !ok {
		return
	}
	counters := f.dist.live()
	if len(counters) == 0 {
		return
	}
	now := f.cfg.Now()
	nodes := int(f.nodes.Load())
	var ops []SketchOp
	var refs []dref
	for _, c := range counters {
		ops, refs = c.collect(ops, refs, now.UnixNano(), nodes)
	}
	if len(ops) == 0 {
		return
	}
	top := f.eps.top.Load()
	type round struct {
		ops  []SketchOp
		refs []dref
	}
	rounds := make([]round, len(top.eps))
	for i := range ops {
		r := &rounds[top.of(KeySlot(ops[i].Key[0]))]
		r.ops = append(r.ops, ops[i])
		r.refs = append(r.refs, refs[i])
	}
	var wg sync.WaitGroup
	for i := range rounds {
		r := &rounds[i]
		if len(r.ops) == 0 {
			continue
		}
		ep := top.eps[i]
		if ok, _ := ep.br.Allow(now); !ok {
			f.dist.met.flushes.WithLabelValues("skipped").Inc()
			for _, ref := range r.refs {
				ref.c.settle(ref, [2][]byte{}, false)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := 0; start < len(r.ops); start += BatchSize {
				end := min(start+BatchSize, len(r.ops))
				if !f.sendSketches(ctx, ss, ep, r.ops[start:end], r.refs[start:end]) {
					for _, ref := range r.refs[end:] {
						ref.c.settle(ref, [2][]byte{}, false)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
}

// sendSketches runs one pipeline of merges under the deadline and
// settles its keys.
func (f *Fleet) sendSketches(ctx context.Context, ss SketchStore, ep *endpoint, ops []SketchOp, refs []dref) bool {
	rep, er := make([][2][]byte, len(ops)), make([]error, len(ops))
	t0 := f.cfg.Now()
	err, inTime := f.bounded(ctx, func(ctx context.Context) error { return ss.MergeSketches(ctx, ops, rep, er) })
	if !inTime {
		rep, er = make([][2][]byte, len(ops)), make([]error, len(ops))
	}
	t1 := f.cfg.Now()
	f.dist.met.duration.Observe(t1.Sub(t0).Seconds())
	if err != nil {
		ep.br.Failure(t1)
		outcome := "error"
		if ctxErr(err) {
			outcome = "timeout"
		}
		f.dist.met.flushes.WithLabelValues(outcome).Inc()
		f.log.Debug("fleet: redis distinct merge failed", "endpoint", ep.name, "err", err)
		for i := range ops {
			refs[i].c.settle(refs[i], rep[i], er[i] == nil && inTime)
		}
		return false
	}
	ep.br.Success()
	f.lastOK.Store(t1.UnixNano())
	f.dist.met.flushes.WithLabelValues("ok").Inc()
	for i := range ops {
		refs[i].c.settle(refs[i], rep[i], true)
		if ops[i].Send[0] != nil || ops[i].Send[1] != nil {
			f.dist.met.keys.WithLabelValues("write").Inc()
		} else {
			f.dist.met.keys.WithLabelValues("read").Inc()
		}
		f.dist.met.bytes.Add(float64(refs[i].bytes))
	}
	return true
}

// collect appends an op for each touched key whose sketches changed since
// they were last sent, or that is near its limit: at most perFlsh; the
// rest stay touched for the next flush.
func (c *DistinctCounter) collect(ops []SketchOp, refs []dref, now int64, nodes int) ([]SketchOp, []dref) {
	// Writes (new values) first: a write reads the merged sketch back
	// too, and a node with new values is the one that trips. A read only
	// refreshes a node that has none, and takes at most an eighth of the
	// flush's keys.
	budget, reads := c.perFlsh, max(c.perFlsh/8, 1)
	refresh := distinctRefresh * int64(c.f.cfg.FlushInterval)
	sweep := c.pass.Add(1)%distinctRefresh == 0
	shards := c.keys.Shards()
	for si := range shards {
		sh := &shards[si]
		sh.Lock()
		if sweep {
			// Keys idle for two periods have nothing left in the period.
			for i, k := range sh.All() {
				if k.flags&(dfTouched|dfFlying) == 0 && now-k.last >= 2*c.period {
					sh.Delete(releaseLocked(sh, i))
				}
			}
		}
		keep := sh.Ext.touched[:0]
		for _, key := range sh.Ext.touched {
			i := sh.Lookup(key)
			if i < 0 {
				continue
			}
			k, v := sh.Val(i), viewOf(sh, i)
			if budget == 0 || k.flags&dfFlying != 0 {
				if budget == 0 && k.flags&dfFlying == 0 {
					c.f.dist.met.deferred.Inc()
				}
				keep = append(keep, key)
				continue
			}
			if now-k.last >= 2*c.period {
				// Nothing of it is left in the period: forget it.
				sh.Delete(releaseLocked(sh, i))
				continue
			}
			changed := k.flags&dfChanged != 0
			near := now-k.last < refresh && c.nearLocked(key, k, v, now, nodes)
			if !changed && (!near || reads == 0) {
				if near {
					keep = append(keep, key) // read at a later flush
				} else {
					k.flags &^= dfTouched
				}
				continue
			}
			start := c.local.WindowStart(now)
			op := SketchOp{TTL: max(2*c.period/int64(time.Millisecond), 1)}
			ref := dref{c: c, key: key, gen: k.gen, win: start}
			for w := range 2 {
				ws := start - int64(w)*c.period
				op.Key[w] = c.sketchKey(key, ws)
			}
			if changed {
				// What changed since the last send goes, each window whose
				// sketch is not what was sent of it.
				k.flags &^= dfChanged
				var sk [2]counting.Sketch
				c.local.Sketches(key, now, &sk[0], &sk[1])
				for w := range 2 {
					ref.sums[w] = sentMark{win: start - int64(w)*c.period}
					if sk[w].Empty() {
						continue
					}
					b, _ := sk[w].AppendBinary(nil)
					ref.sums[w].sum = counting.Hash(b)
					if v.sentFor(ref.sums[w].win) != ref.sums[w].sum {
						op.Send[w] = b
						ref.bytes += len(b)
					}
				}
				ref.wrote = op.Send[0] != nil || op.Send[1] != nil
				if !ref.wrote && !near {
					k.flags &^= dfTouched
					continue
				}
			}
			if !ref.wrote {
				if reads == 0 {
					keep = append(keep, key) // read at a later flush
					continue
				}
				reads--
			}
			budget--
			k.flags |= dfFlying
			ops, refs = append(ops, op), append(refs, ref)
			if near {
				keep = append(keep, key) // read back again next flush
			} else {
				k.flags &^= dfTouched
			}
		}
		clear(sh.Ext.touched[len(keep):])
		sh.Ext.touched = keep
		sh.Unlock()
	}
	return ops, refs
}

// sentFor returns the sum of what was last sent of window ws.
func (v *dfview) sentFor(ws int64) uint64 {
	for _, s := range v.sent {
		if s.win == ws {
			return s.sum
		}
	}
	return 0
}

// sketchKey names the fleet's sketch of key's window starting at ws.
func (c *DistinctCounter) sketchKey(key uint64, ws int64) string {
	var buf [96]byte
	b := append(buf[:0], c.prefix...)
	b = strconv.AppendUint(b, key, 16)
	b = append(b, "}:d"...)
	b = strconv.AppendInt(b, ws/c.period, 10)
	return string(b)
}

// settle keeps the fleet's answer to one op, or on failure lists the key
// to be sent again.
func (c *DistinctCounter) settle(r dref, rep [2][]byte, ok bool) {
	var fl [2]counting.Sketch
	if ok {
		for w := range 2 {
			if err := fl[w].UnmarshalBinary(rep[w]); err != nil {
				c.f.dist.met.flushes.WithLabelValues("error").Inc()
				c.f.log.Warn("fleet: redis distinct sketch unreadable", "rule", c.rule.Name, "err", err)
				ok = false
			}
		}
	}
	sh := c.keys.For(r.key)
	sh.Lock()
	defer sh.Unlock()
	i := sh.Lookup(r.key)
	if i < 0 || sh.Val(i).gen != r.gen {
		return // forgotten meanwhile
	}
	k, v := sh.Val(i), viewOf(sh, i)
	k.flags &^= dfFlying
	if !ok {
		if r.wrote {
			k.flags |= dfChanged // to be sent again
		}
		touchLocked(sh, r.key, k)
		return
	}
	if r.wrote {
		v.sent = r.sums
	}
	// The view is the union of the local windows now and the fleet's as
	// Redis answered (the local window may have moved since the send).
	now := max(c.f.cfg.Now().UnixNano(), k.last)
	var lc, lp counting.Sketch
	start, _ := c.local.Sketches(r.key, now, &lc, &lp)
	v.view, v.vstart = [2]counting.Sketch{lc, lp}, start
	switch start {
	case r.win:
		v.view[0].Union(&fl[0])
		v.view[1].Union(&fl[1])
	case r.win + c.period:
		v.view[1].Union(&fl[0])
	}
	v.estimate()
	// Only a view that holds values the local table does not needs
	// AddDistinct to keep it (its fast path skips it otherwise).
	k.flags &^= dfAdds
	if !lc.Covers(&v.view[0]) || !lp.Covers(&v.view[1]) {
		k.flags |= dfAdds
	}
	// Read it back at the next flush while it is in use and near its
	// limit, even without new values here: the others' reach this node
	// within one flush of reaching Redis.
	k.seen = now
	if k.flags&dfTouched == 0 && now-k.last < distinctRefresh*int64(c.f.cfg.FlushInterval) &&
		c.nearLocked(r.key, k, v, now, int(c.f.nodes.Load())) {
		touchLocked(sh, r.key, k)
	}
}

// nearLocked reports whether key is near its limit at now and not over
// it: at least limit/nodes. A count over the limit spread over N nodes
// has at least a share 1/N of it on one of them, which reads it back and
// trips (and its mitigation reaches every node). A key over its limit
// has tripped: reading it back again changes nothing until its window
// moves.
func (c *DistinctCounter) nearLocked(key uint64, k *dfkey, v *dfview, now int64, nodes int) bool {
	var r counting.Result
	if k.flags&dfAdds != 0 && c.local.WindowStart(now) < v.vstart+2*c.period {
		r = c.local.ResultOf(v.vstart, v.vcur, v.vuni, now)
	} else {
		r = c.local.Peek(key, now)
	}
	return !r.Exceeded && r.Count*float64(max(nodes, 1)) >= c.local.Limit()
}

// distinctMetrics are the distinct tier's metrics.
type distinctMetrics struct {
	flushes  *prometheus.CounterVec
	duration prometheus.Histogram
	keys     *prometheus.CounterVec
	bytes    prometheus.Counter
	deferred prometheus.Counter
	evicted  prometheus.Counter
}

func newDistinctMetrics(reg prometheus.Registerer) (*distinctMetrics, error) {
	m := &distinctMetrics{
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_counting_redis_distinct_flushes_total",
			Help: "Pipelines of distinct-sketch merges sent to Redis, by outcome (ok, error, timeout, skipped while the breaker is open).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "guardd_counting_redis_distinct_request_duration_seconds",
			Help:    "Round trip of one pipeline of distinct-sketch merges.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1},
		}),
		keys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_counting_redis_distinct_keys_flushed_total",
			Help: "Distinct-sketch scripts run, one per key per flush, by op: write (new local values merged) or read (a key near its limit read back).",
		}, []string{"op"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_counting_redis_distinct_sent_bytes_total",
			Help: "Bytes of distinct sketches sent to Redis.",
		}),
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_counting_redis_distinct_deferred_keys_total",
			Help: "Keys left for the next flush because a flush reached its cap of keys per rule.",
		}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_counting_redis_distinct_evicted_keys_total",
			Help: "Keys whose fleet sketches were dropped to stay under the cap of keys per rule.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.flushes, m.duration, m.keys, m.bytes, m.deferred, m.evicted} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

package counting

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Regularity keeps, per key, the intervals between the key's last events,
// and judges whether they are machine-regular: a script that sleeps two
// seconds between requests sends them at near-constant intervals, people
// browse in bursts. Each key holds a ring of its last RegularityIntervals
// intervals (milliseconds), so its memory is fixed (RegularitySlotBytes);
// nothing is computed per event but the ring's write, and the statistic
// only when the caller asks for a judgement. It is safe for concurrent use:
// keys are spread over the shards of a Sharded table, as in Table.
//
// Time is the caller's (unix nanoseconds). An event older than the key's
// newest is ignored (counted by Late): a sleep loop sends in order, and an
// interval cannot be negative. Two events at the same time make an interval
// of 0, which is evidence of a burst, not of regularity. A pause longer
// than Gap starts the key's intervals over, and a key idle for longer than
// Gap is forgotten (Sweep, or when a full shard needs room).
type Regularity struct {
	gap       int64
	minEvents int
	maxCV     float64
	keys      Sharded[struct{}, rslot, regularityShard]
}

// RegularityIntervals is the number of intervals a key keeps: the
// statistic is over the last RegularityIntervals+1 events at most.
const RegularityIntervals = 32

// RegularitySlotBytes is the memory of one key, before the table's load
// factor (TestRegularitySlotSize checks it): its hash, the time of its
// newest event, the ring's position and fill, and the ring.
const RegularitySlotBytes = 8 + 8 + 8 + 4*RegularityIntervals

// rslot is one key's ring. It is kept apart from the key, at the same index
// of a second array: probing reads only keys, eight to a cache line.
type rslot struct {
	last int64 // time of the key's newest event
	head uint8 // where the next interval goes
	n    uint8 // intervals held, up to RegularityIntervals
	_    [6]byte
	iv   [RegularityIntervals]uint32 // milliseconds, saturated at MaxUint32
}

type rshard = Shard[struct{}, rslot, regularityShard]

// regularityShard is what a Regularity's shard holds beside its keys.
type regularityShard struct{ late uint64 }

// RegularityConfig configures a Regularity table. Gap, MinEvents and MaxCV
// are required; MaxKeys and Shards default as in Config.
type RegularityConfig struct {
	// Gap is the longest pause inside a run of events: a longer one starts
	// the key's intervals over.
	Gap time.Duration
	// MinEvents is how many events (MinEvents-1 intervals) a key needs
	// before it can be judged regular: 3 to RegularityIntervals+1.
	MinEvents int
	// MaxCV is the highest coefficient of variation (standard deviation
	// over mean) of the intervals judged regular, in (0, 1].
	MaxCV   float64
	MaxKeys int
	Shards  int
}

// NewRegularity validates cfg and returns an empty table.
func NewRegularity(cfg RegularityConfig) (*Regularity, error) {
	if cfg.Gap <= 0 || cfg.Gap > MaxPeriod {
		return nil, fmt.Errorf("counting: regularity: gap %v: must be > 0 and <= %v", cfg.Gap, MaxPeriod)
	}
	if cfg.MinEvents < 3 || cfg.MinEvents > RegularityIntervals+1 {
		return nil, fmt.Errorf("counting: regularity: min events %d: must be 3 to %d", cfg.MinEvents, RegularityIntervals+1)
	}
	if !(cfg.MaxCV > 0 && cfg.MaxCV <= 1) {
		return nil, fmt.Errorf("counting: regularity: max cv %v: must be > 0 and <= 1", cfg.MaxCV)
	}
	if cfg.MaxKeys < 0 || cfg.Shards < 0 || cfg.Shards > 1<<16 {
		return nil, fmt.Errorf("counting: regularity: max keys %d, shards %d: must be >= 0 (shards <= %d)", cfg.MaxKeys, cfg.Shards, 1<<16)
	}
	// A key is about five Table slots: the cap is a quarter of Table's,
	// which keeps a full table near 60 MB at the default
	// (152 bytes a slot, half again as many slots as keys).
	n, perShard := shardLayout(cfg.MaxKeys, 4, cfg.Shards)
	r := &Regularity{gap: int64(cfg.Gap), minEvents: cfg.MinEvents, maxCV: cfg.MaxCV}
	r.keys.Init(n, perShard)
	return r, nil
}

// Add records an event of key at now (unix nanoseconds). With judge set it
// also reports whether the key's intervals, this one included, are
// machine-regular: at least MinEvents events in the run and a coefficient
// of variation at most MaxCV (see Timing.Regular). It allocates nothing
// once the key's shard has grown to hold it.
func (r *Regularity) Add(key uint64, now int64, judge bool) (regular bool) {
	s, key, hash := r.keys.Place(key)
	s.Lock()
	i, found := s.Claim(key, hash)
	if i < 0 {
		i = s.Make(key, func() int { return r.victimLocked(s, now) })
	}
	sl := s.Side(i)
	// One unsigned comparison tests 0 <= d <= gap, the path of every
	// event but a key's first, a late one and one after a pause.
	if d := now - sl.last; found && uint64(d) <= uint64(r.gap) {
		h := sl.head % RegularityIntervals // it is below already: spares the bounds check
		sl.iv[h] = uint32(min(uint64(d)/uint64(time.Millisecond), math.MaxUint32))
		sl.head = (h + 1) % RegularityIntervals
		if sl.n < RegularityIntervals {
			sl.n++ // else full: a ring of the last intervals
		}
		sl.last = now
	} else if found && d < 0 {
		s.Ext.late++
	} else {
		*sl = rslot{last: now} // a new key, or a pause longer than Gap
	}
	if judge {
		regular = r.regularLocked(sl)
	}
	s.Unlock()
	return regular
}

func (r *Regularity) regularLocked(sl *rslot) bool {
	if int(sl.n)+1 < r.minEvents {
		return false
	}
	_, cv := IntervalCV(sl.iv[:sl.n])
	return cv <= r.maxCV
}

// Timing is what a key's intervals look like.
type Timing struct {
	Events int           // events in the key's run, counted up to RegularityIntervals+1
	Mean   time.Duration // mean interval, trimmed as IntervalCV trims
	CV     float64       // coefficient of variation, as IntervalCV computes it
}

// Peek returns key's timing at now without recording anything; ok is false
// for a key not tracked, or idle for longer than Gap.
func (r *Regularity) Peek(key uint64, now int64) (t Timing, ok bool) {
	s, key, _ := r.keys.Place(key)
	s.Lock()
	defer s.Unlock()
	i := s.Lookup(key)
	if i < 0 || now-s.Side(i).last > r.gap {
		return Timing{}, false
	}
	sl := s.Side(i)
	mean, cv := IntervalCV(sl.iv[:sl.n])
	return Timing{Events: int(sl.n) + 1, Mean: time.Duration(mean * float64(time.Millisecond)), CV: cv}, true
}

// IntervalCV returns the mean (in the intervals' unit, milliseconds) and
// the coefficient of variation (standard deviation over mean) of
// intervals, made robust for judging a sleep loop:
//
//   - The shortest and the longest sixteenth are left out (trimmed), so that
//     a slow answer, a retry or a pause (two of each in 32) does not hide
//     a loop.
//   - When every interval is a whole number of seconds (logs with
//     one-second timestamps, such as nginx's $time_local), the variance of
//     that rounding, 1 s²/12, is taken off (Sheppard's correction): a loop
//     of 2.5 s logged to the second alternates 2 s and 3 s intervals, a
//     spread that is the clock's, not the client's.
//
// With fewer than two intervals, or a mean of 0 (every event at one
// instant), the CV is +Inf: nothing regular can be said. intervals is not
// changed; up to RegularityIntervals of them are read, the first ones.
// It allocates nothing.
func IntervalCV(intervals []uint32) (mean, cv float64) {
	var buf [RegularityIntervals]uint32
	n := copy(buf[:], intervals)
	if n < 2 {
		return 0, math.Inf(1)
	}
	v := buf[:n]
	slices.Sort(v)
	whole := true
	for _, x := range v {
		if x%1000 != 0 {
			whole = false
			break
		}
	}
	trim := n / 16
	v = v[trim : n-trim]
	sum := 0.0
	for _, x := range v {
		sum += float64(x)
	}
	mean = sum / float64(len(v))
	if mean == 0 {
		return 0, math.Inf(1)
	}
	ss := 0.0
	for _, x := range v {
		d := float64(x) - mean
		ss += d * d
	}
	variance := ss / float64(len(v))
	if whole {
		variance = max(variance-1000*1000/12.0, 0)
	}
	return mean, math.Sqrt(variance) / mean
}

// victimLocked picks the key a full shard evicts: an idle key, or the
// sampled key with the fewest intervals (the oldest among equals). A flood
// of keys seen once evicts itself and leaves the long runs, the ones worth
// judging.
func (r *Regularity) victimLocked(s *rshard, now int64) int {
	victim := -1
	for i := range s.Sample() {
		sl, v := s.Side(i), s.Side(max(victim, 0))
		if now-sl.last > r.gap {
			victim = i
			break
		}
		if victim < 0 || sl.n < v.n || (sl.n == v.n && sl.last < v.last) {
			victim = i
		}
	}
	return victim
}

// Sweep drops the keys idle for longer than Gap at now and returns how many
// it dropped.
func (r *Regularity) Sweep(now int64) int {
	return r.keys.Sweep(func(s *rshard, i int) bool { return now-s.Side(i).last > r.gap })
}

// Len returns the number of keys tracked.
func (r *Regularity) Len() int { return r.keys.Len() }

// Evictions returns how many keys were dropped to stay under MaxKeys.
func (r *Regularity) Evictions() uint64 { return r.keys.Evictions() }

// Late returns how many events were ignored for being older than their
// key's newest.
func (r *Regularity) Late() uint64 {
	return r.keys.Sum(func(s *rshard) uint64 { return s.Ext.late })
}

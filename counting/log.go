package counting

import (
	"slices"
	"time"
)

// eventLog holds the sliding logs of one shard: fixed blocks of k entries,
// one block per key, entries sorted by time. Blocks are reused through a free
// list, so a key costs 12*k bytes here besides its slot.
type eventLog struct {
	k    int
	at   []int64   // event times
	w    []float32 // event sizes
	free []int64   // released blocks
}

func (l *eventLog) alloc() int64 {
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		return b
	}
	b := int64(len(l.at) / l.k)
	l.at = slices.Grow(l.at, l.k)[:len(l.at)+l.k]
	l.w = slices.Grow(l.w, l.k)[:len(l.w)+l.k]
	return b
}

func (l *eventLog) release(b int64) { l.free = append(l.free, b) }

// block returns the whole block of a key.
func (l *eventLog) block(sl *slot) ([]int64, []float32) {
	i := int(sl.t) * l.k
	return l.at[i : i+l.k], l.w[i : i+l.k]
}

// entries returns the key's entries, oldest first.
func (l *eventLog) entries(sl *slot) ([]int64, []float32) {
	at, w := l.block(sl)
	n := int(sl.b)
	return at[:n], w[:n]
}

// Sliding log.
//
// A key is judged at the time of its newest event. A late event still inside
// the period is inserted in time order; an older one is ignored and counted
// by Late. The log holds at most ceil(Requests)+1 entries: when full, the
// oldest entry is merged into the next one (sizes added, later time kept),
// which can only over-count. With events of size >= 1 every decision is
// still exact, because the merge only matters once the newer entries alone
// exceed the limit.

func (t *Table) logAdd(s *shard, sl *slot, n float64, now int64) Result {
	at, w := s.Ext.log.block(sl)
	cnt := int(sl.b)
	ref := now
	if cnt > 0 && at[cnt-1] > ref {
		ref = at[cnt-1]
	}
	drop := 0
	for drop < cnt && at[drop] <= ref-t.period {
		drop++
	}
	if drop > 0 {
		copy(at, at[drop:cnt])
		copy(w, w[drop:cnt])
		cnt -= drop
	}
	if now <= ref-t.period {
		s.Ext.late++
	} else {
		if cnt == len(at) {
			w[1] += w[0]
			copy(at, at[1:cnt])
			copy(w, w[1:cnt])
			cnt--
		}
		j := cnt
		for j > 0 && at[j-1] > now {
			at[j], w[j] = at[j-1], w[j-1]
			j--
		}
		at[j], w[j] = now, float32(n)
		cnt++
	}
	sl.b = float64(cnt)
	return t.logResult(at[:cnt], w[:cnt], ref, n)
}

// logView returns the entries of a key inside the period ending at ref, the
// later of now and the key's newest event.
func (t *Table) logView(s *shard, sl *slot, now int64) ([]int64, []float32, int64) {
	at, w := s.Ext.log.entries(sl)
	ref := now
	if len(at) > 0 && at[len(at)-1] > ref {
		ref = at[len(at)-1]
	}
	i := 0
	for i < len(at) && at[i] <= ref-t.period {
		i++
	}
	return at[i:], w[i:], ref
}

func (t *Table) logResult(at []int64, w []float32, ref int64, m float64) Result {
	sum := 0.0
	for _, x := range w {
		sum += float64(x)
	}
	r := Result{Count: sum, Remaining: max(0, t.requests-sum)}
	if len(at) == 0 {
		return r
	}
	end := at[len(at)-1] + t.period
	r.Reset = dur(end - ref)
	if sum <= t.requests {
		return r
	}
	r.Exceeded = true
	r.RetryAfter = t.logRetry(at, w, ref, sum, m)
	return r
}

// logRetry is when the entries' sum falls to Requests - m, as the oldest
// slide out of the period ending at ref.
func (t *Table) logRetry(at []int64, w []float32, ref int64, sum, m float64) time.Duration {
	end := at[len(at)-1] + t.period
	if target := t.requests - m; target >= 0 {
		rem := sum
		for i := range at {
			rem -= float64(w[i])
			if rem <= target {
				end = at[i] + t.period
				break
			}
		}
	}
	return retryAfter(float64(end - ref))
}

package counting

// admitLocked records an event of size n only if it fits under the limit
// (see Table.Admit).
func (t *Table) admitLocked(s *shard, sl *slot, n float64, now int64) Result {
	switch t.alg {
	case FixedWindow:
		v, at := t.fixedView(sl, now)
		if v.a+n <= t.requests {
			return t.fixedAdd(s, sl, n, now)
		}
		r := t.fixedResult(&v, at, n)
		r.Exceeded = true
		r.RetryAfter = retryAfter(float64(v.t + t.period - at)) // the window's end
		return r
	case SlidingLog:
		at, w, ref := t.logView(s, sl, now)
		sum := 0.0
		for _, x := range w {
			sum += float64(x)
		}
		if sum+n <= t.requests {
			return t.logAdd(s, sl, n, now)
		}
		r := t.logResult(at, w, ref, n)
		r.Exceeded = true
		if len(at) == 0 {
			r.RetryAfter = retryAfter(float64(t.period)) // n > Requests: never fits
		} else {
			r.RetryAfter = t.logRetry(at, w, ref, sum, n)
		}
		return r
	case TokenBucket, GCRA:
		return t.addLocked(s, sl, n, now)
	default:
		v, at := t.slidingView(sl, now)
		est := v.b*float64(t.period-(at-v.t))*t.perNS + v.a
		if est+n <= t.requests {
			return t.slidingAdd(s, sl, n, now)
		}
		r := t.slidingResult(&v, at, n)
		r.Exceeded = true
		r.RetryAfter = t.slidingRetry(&v, at, n)
		return r
	}
}

package mitigation

import "time"

// LookupRule returns the mitigation rule holds on the scope whose Key is
// key, unexpired at now. The pipeline asks it before adding a trip, so a
// rule over its limit on every request does not rewrite its mitigation each
// time. Like Lookup, it runs concurrently with writers.
func (s *Store) LookupRule(key uint64, rule string, now time.Time) (Mitigation, bool) {
	sh := s.shardOf(key)
	sec, nsec := wall(now)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	for n := sh.m[key]; n != nil; n = n.next {
		if n.expiresAfter(sec, nsec) && n.label.rule == rule {
			return n.mitigation(), true
		}
	}
	return Mitigation{}, false
}

package mitigation

import "time"

// LookupRule returns the mitigation rule holds on the scope whose Key is
// key, unexpired at now. The pipeline asks it before adding a trip, so a
// rule over its limit on every request does not rewrite its mitigation each
// time. Like Lookup, it does not allocate and runs concurrently with
// writers.
func (s *Store) LookupRule(key uint64, rule string, now time.Time) (Mitigation, bool) {
	sh := &s.shards[key>>(64-shardBits)]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	c, found := sh.m[key]
	if !found {
		return Mitigation{}, false
	}
	if c.m.Rule == rule && c.m.Expires.After(now) {
		return c.m, true
	}
	if c.more != nil {
		for _, m := range *c.more {
			if m.Rule == rule && m.Expires.After(now) {
				return m, true
			}
		}
	}
	return Mitigation{}, false
}

package mitigation

// change is one record of the change feed.
// It points at the store's node: a node is changed in place (extended,
// another action), so a change reads as the mitigation's latest form, which
// is what since returns; a removed node no longer changes.
type change struct {
	seq     uint64
	n       *node
	deleted bool // deleted, evicted or expired
	created bool // the record that created n (its first add)
}

// feed is a ring of the latest changes, numbered by seq. It grows to size
// as changes come, so an idle store does not hold the whole history.
type feed struct {
	ring []change
	size int    // capacity of the ring
	head int    // where the next change goes once the ring is full
	n    int    // changes held
	seq  uint64 // seq of the latest change, the current cursor
}

func (f *feed) init(size int, base uint64) {
	f.size = size
	f.seq = base
}

func (f *feed) push(c change) {
	f.seq++
	c.seq = f.seq
	if len(f.ring) < f.size {
		f.ring = append(f.ring, c)
		f.n = len(f.ring)
		f.head = len(f.ring) % f.size
		return
	}
	f.ring[f.head] = c
	f.head = (f.head + 1) % f.size
}

// at returns the change numbered seq, which must be held.
func (f *feed) at(seq uint64) *change {
	back := int(f.seq - seq) // 0 for the latest
	return &f.ring[(f.head-1-back+2*len(f.ring))%len(f.ring)]
}

func (f *feed) since(since uint64) (added, deleted []Mitigation, cursor uint64, ok bool) {
	if since > f.seq || f.seq-since > uint64(f.n) {
		return nil, nil, f.seq, false
	}
	type state struct {
		last    uint64
		created bool
	}
	ids := make(map[uint64]state, f.seq-since)
	for q := since + 1; q <= f.seq; q++ {
		c := f.at(q)
		st := ids[c.n.id]
		st.last = q
		st.created = st.created || c.created
		ids[c.n.id] = st
	}
	for q := since + 1; q <= f.seq; q++ {
		c := f.at(q)
		st := ids[c.n.id]
		switch {
		case st.last != q:
		case !c.deleted:
			added = append(added, c.n.mitigation())
		case !st.created:
			deleted = append(deleted, c.n.mitigation())
		}
	}
	return added, deleted, f.seq, true
}

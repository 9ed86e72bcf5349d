package redis

// A DistinctCounter shard's keys: an open-addressing table of 56-byte
// dfkey slots (linear probing, backward-shift deletion), so that the
// AddDistinct of a key costs one cache line more than the local table's,
// not a map's group and a slice's element. A slot holds the index of its
// key's dfview in a slice of its own, which does not move when slots do.

const dfMinSlots = 16

// mix spreads the bits of a key, as counting's tables do with theirs.
func mix(key uint64) uint64 {
	key ^= key >> 33
	key *= 0xff51afd7ed558ccd
	key ^= key >> 33
	return key
}

// home is the first slot of key in a table of mask+1 slots; the shard took
// the top bits of the same mix.
func dfHome(key uint64, mask int) int { return int(mix(key)) & mask }

// findLocked returns key's slot, or where it would go and false.
func (sh *dfshard) findLocked(key uint64) (int, bool) {
	if len(sh.slots) == 0 {
		return 0, false
	}
	mask := len(sh.slots) - 1
	for i := dfHome(key, mask); ; i = (i + 1) & mask {
		switch sh.slots[i].key {
		case key:
			return i, true
		case 0:
			return i, false
		}
	}
}

// insertLocked makes a slot for key, which is not in the table, with a
// view of its own, and returns the slot.
func (sh *dfshard) insertLocked(key uint64) int {
	if (sh.n+1)*4 > len(sh.slots)*3 {
		sh.growLocked()
	}
	i, _ := sh.findLocked(key)
	var vi int32
	if n := len(sh.vfree); n > 0 {
		vi, sh.vfree = sh.vfree[n-1], sh.vfree[:n-1]
	} else {
		sh.views = append(sh.views, dfview{})
		vi = int32(len(sh.views) - 1)
	}
	gen := sh.views[vi].gen + 1
	sh.views[vi] = dfview{gen: gen}
	sh.slots[i] = dfkey{key: key, vi: vi}
	sh.n++
	return i
}

func (sh *dfshard) growLocked() {
	old := sh.slots
	sh.slots = make([]dfkey, max(2*len(old), dfMinSlots))
	mask := len(sh.slots) - 1
	for _, k := range old {
		if k.key == 0 {
			continue
		}
		j := dfHome(k.key, mask)
		for sh.slots[j].key != 0 {
			j = (j + 1) & mask
		}
		sh.slots[j] = k
	}
}

// deleteLocked empties slot i and frees its view; the slot then holds the
// next key of the run, if any (a caller walking the slots looks at i
// again).
func (sh *dfshard) deleteLocked(i int) {
	vi := sh.slots[i].vi
	gen := sh.views[vi].gen
	sh.views[vi] = dfview{gen: gen}
	sh.vfree = append(sh.vfree, vi)
	mask := len(sh.slots) - 1
	for j := (i + 1) & mask; sh.slots[j].key != 0; j = (j + 1) & mask {
		if h := dfHome(sh.slots[j].key, mask); (j-h)&mask >= (j-i)&mask {
			sh.slots[i] = sh.slots[j]
			i = j
		}
	}
	sh.slots[i] = dfkey{}
	sh.n--
}

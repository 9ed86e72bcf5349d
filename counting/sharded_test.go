package counting

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// testShard is a Sharded table as a caller uses it: a V beside the key,
// a W apart, both recording the key so that a slot moved without its V or
// W shows.
type testShard = Shard[uint64, [3]uint64, struct{}]

// checkShard verifies one shard against the keys it should hold: each is
// found where All yields it, its V and W moved with it, n counts them, and
// the table never grows past its cap's slots.
func checkShard(t *testing.T, s *testShard, want map[uint64]bool) {
	t.Helper()
	seen := 0
	for i, v := range s.All() {
		k := s.Key(i)
		if !want[k] {
			t.Fatalf("slot %d holds key %x, deleted or never stored", i, k)
		}
		if j := s.Lookup(k); j != i {
			t.Fatalf("key %x in slot %d found at %d: its probe run is broken", k, i, j)
		}
		if *v != k || s.Side(i)[0] != k {
			t.Fatalf("key %x: V %x, W %x: moved apart from its key", k, *v, s.Side(i)[0])
		}
		seen++
	}
	if seen != len(want) || s.Len() != len(want) {
		t.Fatalf("All yields %d keys, Len %d, want %d", seen, s.Len(), len(want))
	}
	if len(s.e) > s.maxSlots || len(s.e) != len(s.side) {
		t.Fatalf("%d slots (%d W), at most %d", len(s.e), len(s.side), s.maxSlots)
	}
}

// TestShardedOps runs random claims, deletes, replacements and sweeps on
// one shard and checks it against a map after each step. Small key spaces
// make long probe runs that wrap around the table's end, where
// backward-shift deletion is easiest to get wrong.
func TestShardedOps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perShard int
		keys     uint64 // key space
	}{
		{"one key", 1, 4},
		{"tiny", 5, 16},
		{"full often", 40, 64},
		{"growing", 1000, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tab Sharded[uint64, [3]uint64, struct{}]
			tab.Init(1, tc.perShard)
			s := &tab.shards[0]
			rng := rand.New(rand.NewPCG(uint64(tc.perShard), 3))
			want := map[uint64]bool{}
			evictions := uint64(0)
			for step := range 20_000 {
				k := rng.Uint64N(tc.keys) + 1
				switch op := rng.IntN(10); {
				case op < 6: // claim, evicting the last sampled key when full
					i, found := s.Claim(k, s.hash(k))
					if found != want[k] {
						t.Fatalf("step %d: Claim(%x) found %v, want %v", step, k, found, want[k])
					}
					if i < 0 {
						full := len(want) >= tc.perShard
						called := false
						i = s.Make(k, func() int {
							called = true
							var victim int
							for j := range s.Sample() {
								victim = j
							}
							delete(want, s.Key(victim))
							evictions++
							return victim
						})
						if called != full || i < 0 {
							t.Fatalf("step %d: %d keys of %d: Make called victim %v, stored at %d", step, len(want), tc.perShard, called, i)
						}
					}
					if !found {
						if *s.Val(i) != 0 || *s.Side(i) != [3]uint64{} {
							t.Fatalf("step %d: new key %x starts with V %x, W %v", step, k, *s.Val(i), *s.Side(i))
						}
						*s.Val(i), *s.Side(i) = k, [3]uint64{k, k, k}
					}
					want[k] = true
				case op < 9: // delete
					if i := s.Lookup(k); i >= 0 {
						s.Delete(i)
						delete(want, k)
					} else if want[k] {
						t.Fatalf("step %d: key %x lost", step, k)
					}
				default: // sweep a third of the keys
					third := k % 3
					dropped := tab.Sweep(func(s *testShard, i int) bool { return s.Key(i)%3 == third })
					n := 0
					for k := range want {
						if k%3 == third {
							delete(want, k)
							n++
						}
					}
					if dropped != n {
						t.Fatalf("step %d: Sweep dropped %d, want %d", step, dropped, n)
					}
				}
				checkShard(t, s, want)
			}
			if got := tab.Evictions(); got != evictions {
				t.Errorf("Evictions %d, want %d", got, evictions)
			}
			if got := tab.Len(); got != len(want) {
				t.Errorf("Len %d, want %d", got, len(want))
			}
		})
	}
}

// store stores key in a shard under its cap.
func store[V, W, E any](s *Shard[V, W, E], key uint64) {
	if i, _ := s.Claim(key, s.hash(key)); i < 0 {
		s.Make(key, nil)
	}
}

// TestShardedSample: a full shard's sample is sampleSize distinct keys, in
// slot order from a random position (wrapping at the end); a shard with
// fewer keys yields them all.
func TestShardedSample(t *testing.T) {
	for _, keys := range []int{1, 5, sampleSize, 100} {
		var tab Sharded[uint64, struct{}, struct{}]
		tab.Init(1, 100)
		s := &tab.shards[0]
		for k := range uint64(keys) {
			store(s, k*ZeroKey+1)
		}
		starts := map[int]bool{}
		for range 50 {
			var got []int
			for i := range s.Sample() {
				if s.Key(i) == 0 {
					t.Fatalf("%d keys: sampled empty slot %d", keys, i)
				}
				got = append(got, i)
			}
			if want := min(keys, sampleSize); len(got) != want {
				t.Fatalf("%d keys: sampled %d, want %d", keys, len(got), want)
			}
			wrapped := false
			for j := 1; j < len(got); j++ {
				if got[j] <= got[j-1] {
					if wrapped || got[j] >= got[0] {
						t.Fatalf("%d keys: sample %v is not in slot order from its start", keys, got)
					}
					wrapped = true
				}
			}
			starts[got[0]] = true
		}
		if keys == 100 && len(starts) < 10 {
			t.Errorf("100 keys: 50 samples began at only %d slots", len(starts))
		}
	}
}

// TestShardedPlaceZeroKey: the key 0 is stored as ZeroKey, in its shard.
func TestShardedPlaceZeroKey(t *testing.T) {
	var tab Sharded[struct{}, struct{}, struct{}]
	tab.Init(64, 10)
	if s, k, h := tab.Place(0); k != ZeroKey || s != tab.For(ZeroKey) || h != tab.For(ZeroKey).hash(ZeroKey) {
		t.Fatalf("Place(0) = shard %p, key %x, hash %x; want shard %p, key %x, hash %x", s, k, h, tab.For(ZeroKey), uint64(ZeroKey), tab.For(ZeroKey).hash(ZeroKey))
	}
	if s, k, h := tab.Place(5); k != 5 || s != tab.For(5) || h != tab.For(5).hash(5) {
		t.Fatalf("Place(5) = shard %p, key %x, hash %x; want shard %p, key 5, hash %x", s, k, h, tab.For(5), tab.For(5).hash(5))
	}
	var one Sharded[struct{}, struct{}, struct{}] // one shard: no bits pick it
	one.Init(1, 10)
	if s, k, h := one.Place(5); k != 5 || s != &one.Shards()[0] || h != mix(5) {
		t.Fatalf("one shard: Place(5) = shard %p, key %x, hash %x; want shard %p, key 5, hash %x", s, k, h, &one.Shards()[0], mix(5))
	}
}

// TestShardedClaimAllocs: claiming a key held costs no allocation.
func TestShardedClaimAllocs(t *testing.T) {
	var tab Sharded[slot, struct{}, struct{}]
	tab.Init(4, 1000)
	for k := range uint64(1000) {
		s, key, _ := tab.Place(k)
		s.Lock()
		store(s, key)
		s.Unlock()
	}
	k := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		s, key, hash := tab.Place(k % 1000)
		s.Lock()
		s.Claim(key, hash)
		s.Unlock()
		k++
	}); n != 0 {
		t.Errorf("Claim of a held key: %v allocations, want 0", n)
	}
}

// The slots of the four tables built on Sharded keep their size: a
// Table's key and slot are 32 bytes (doc.go's Memory), a Distinct's 64
// (TestDistinctSlotSize), a Regularity's key 8 beside its ring
// (TestRegularitySlotSize), and a V of struct{} costs nothing.
func TestShardedEntrySize(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"Table", unsafe.Sizeof(entry[slot]{}), 32},
		{"Distinct", unsafe.Sizeof(entry[dslot]{}), DistinctSlotBytes},
		{"key alone", unsafe.Sizeof(entry[struct{}]{}), 8},
		{"key and int64", unsafe.Sizeof(entry[int64]{}), 16},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: entry of %d bytes, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestShardStride: no shard of the package's tables is a multiple of two
// cache lines long. In an array of such shards every lock falls in half of
// L1's sets or fewer (a quarter at 256 bytes), where the table's slots
// evict them; counting/redis checks its own shards the same way.
func TestShardStride(t *testing.T) {
	for name, size := range map[string]uintptr{
		"Table":      unsafe.Sizeof(shard{}),
		"Distinct":   unsafe.Sizeof(Shard[dslot, struct{}, distinctShard]{}),
		"Regularity": unsafe.Sizeof(Shard[struct{}, rslot, regularityShard]{}),
	} {
		if size%128 == 0 {
			t.Errorf("%s's shard is %d bytes, a multiple of 128: change its pad", name, size)
		}
	}
}

package counting

import "github.com/cespare/xxhash/v2"

// Hash returns the 64-bit xxHash (XXH64, seed 0) of b. It is the same on
// every process and machine, so keys built from it can later be shared
// with other guardd instances through a remote store.
func Hash(b []byte) uint64 { return xxhash.Sum64(b) }

// HashString is Hash for a string, without converting it.
func HashString(s string) uint64 { return xxhash.Sum64String(s) }

//go:build race

package signature

// raceEnabled: sync.Pool drops items at random under the race detector,
// so allocation counts differ.
const raceEnabled = true

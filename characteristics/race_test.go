//go:build race

package characteristics

// raceEnabled: allocation counts differ under the race detector.
const raceEnabled = true

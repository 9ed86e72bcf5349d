//go:build race

package session

// raceEnabled: allocation counts differ under the race detector.
const raceEnabled = true

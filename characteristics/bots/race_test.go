//go:build race

package bots

// raceEnabled: allocation counts differ under the race detector.
const raceEnabled = true

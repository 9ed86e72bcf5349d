//go:build race

package nginxlog

// raceEnabled: allocation counts differ under the race detector.
const raceEnabled = true

//go:build race

package counting

// raceEnabled: the race detector makes allocation counts meaningless.
const raceEnabled = true

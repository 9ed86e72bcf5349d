//go:build !race

package characteristics

const raceEnabled = false

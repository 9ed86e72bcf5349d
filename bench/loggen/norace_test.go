//go:build !race

package loggen_test

const raceEnabled = false

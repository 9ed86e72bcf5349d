//go:build race

package redis

const raceEnabled = true

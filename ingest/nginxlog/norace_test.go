//go:build !race

package nginxlog

const raceEnabled = false

// Package testwait is how guardd's tests wait for something that another
// goroutine or process does (a line read, a listener up, a counter moved, a
// file rewritten): a condition polled, with backoff, until it holds or a
// deadline passes, and then a failure that names what was awaited. It
// replaces guessed sleeps, which are either too short on a busy machine or
// too long everywhere else.
//
// The polls sleep on the package time functions, so inside a
// testing/synctest bubble Until waits on the bubble's fake clock: a timeout
// there is in fake time and costs nothing.
//
// Only tests and test-support packages (counting/redis/redistest) import
// it; it promises nothing to production code.
package testwait

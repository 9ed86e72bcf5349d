// Package nginxtest runs the real nginx for guardd's integration tests: it
// finds the binary (skipping when it is absent and the test is not root;
// as root, in CI, a missing nginx fails), starts a master in the foreground
// with its configuration, pid and logs in a directory the caller owns, on a
// free 127.0.0.1 port, and stops that master by the process it started,
// never by name. Clients come from chosen loopback addresses so that tests
// can tell callers apart by ip.src.
package nginxtest

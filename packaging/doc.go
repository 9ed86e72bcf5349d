// Package packaging holds what the guardd Debian package installs besides the
// binary (the hardened systemd unit, the default configuration, the
// maintainer scripts that create the guardd user and state directory), the
// nfpm configuration that scripts/deb.sh builds it with, and the test that
// builds, installs and checks it. It has no Go API.
package packaging

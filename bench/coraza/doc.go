// Package coraza measures the OWASP Core Rule Set through Coraza against
// guardd's built-in rules on the same requests, per event. It is a separate
// module so that guardd itself does not depend on Coraza: see
// BENCHMARKS.md ("Coraza and the Core Rule Set") for the figures and why
// guardd does not embed it.
package coraza

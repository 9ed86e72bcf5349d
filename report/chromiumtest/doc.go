// Package chromiumtest takes screenshots with the real headless Chromium
// for guardd's integration tests of its HTML pages, and counts the pixels
// of a colour in them, so a test checks what a reader would see. It skips
// when Chromium is absent and the test is not root; as root, in CI, a
// missing Chromium fails. Each screenshot uses a fresh profile in a
// directory the test owns and is bounded by a 90-second deadline.
package chromiumtest

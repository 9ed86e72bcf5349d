//go:build integration

package main

import (
	"testing"

	"github.com/guardd/guardd/report"
	"github.com/guardd/guardd/report/chromiumtest"
)

// TestChromiumLiveStatusPage loads the running daemon's /status in headless
// Chromium and checks the picture: the bars of active mitigations are drawn
// (two tables, block twice as long as rate_limit), and the summary's bar of
// requests the decision API answered with a block, in the first screen.
func TestChromiumLiveStatusPage(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	for _, ip := range []string{"203.0.113.7", "203.0.113.8"} {
		cli(t, append([]string{"add", "--scope", "ip.src=" + ip}, clientArgs(td)...)...)
	}
	cli(t, append([]string{"add", "--scope", "ip.src=203.0.113.9", "--action", "rate_limit"}, clientArgs(td)...)...)
	for range 5 {
		td.decide(t, "203.0.113.7", "/")
	}
	top := chromiumtest.Screenshot(t, "http://"+td.d.adminLn.Addr().String()+"/status", 1100, 650)
	if purple := chromiumtest.Pixels(top, report.ColorActed); purple < 260*12*8/10 {
		t.Errorf("summary: %d purple pixels in the first screen, want a full bar (%d)", purple, 260*12)
	}
	img := chromiumtest.Screenshot(t, "http://"+td.d.adminLn.Addr().String()+"/status", 1100, 1200)
	green := chromiumtest.Pixels(img, report.ColorActive)
	want := 2 * (260 + 130) * 12
	t.Logf("%d green pixels, about %d expected", green, want)
	if green < want*8/10 || green > want*12/10 {
		t.Errorf("mitigation bars: %d green pixels, want about %d", green, want)
	}
}

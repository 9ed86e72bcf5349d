//go:build integration

package report

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/guardd/guardd/report/chromiumtest"
)

// screenshot renders url in headless Chromium, with every network fetch
// but the page's own refused, and returns the picture.
func screenshot(t *testing.T, url string) image.Image {
	t.Helper()
	return chromiumtest.Screenshot(t, url, 1100, 1600, chromiumtest.Isolated...)
}

func writePage(t *testing.T, write func(*bytes.Buffer) error) string {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "page.html")
	os.WriteFile(p, b.Bytes(), 0o644)
	return "file://" + p
}

// TestChromiumReplayReport draws the replay report and checks the picture:
// the counted requests (blue), the trips of the brute forcer (red) and the
// benign key at 80% of the limit (orange) are drawn; without the attack, no
// red is.
func TestChromiumReplayReport(t *testing.T) {
	for _, c := range []struct {
		name   string
		attack bool
	}{{"attack", true}, {"benign", false}} {
		t.Run(c.name, func(t *testing.T) {
			r := replayFixture(t, c.attack)
			img := screenshot(t, writePage(t, func(b *bytes.Buffer) error { return WriteReplayHTML(b, r) }))
			blue, red, orange := chromiumtest.Pixels(img, ColorCounted), chromiumtest.Pixels(img, ColorTrips), chromiumtest.Pixels(img, ColorNear)
			t.Logf("%s: %d blue, %d red, %d orange pixels", c.name, blue, red, orange)
			if blue < 500 {
				t.Errorf("counted requests not drawn: %d blue pixels", blue)
			}
			if orange < 1000 { // 80% of a 260-pixel bar, 12 high
				t.Errorf("closeness bar not drawn: %d orange pixels", orange)
			}
			if c.attack && red < 200 {
				t.Errorf("trips not drawn: %d red pixels", red)
			}
			if !c.attack && red != 0 {
				t.Errorf("no rule tripped, yet %d red pixels", red)
			}
		})
	}
}

// TestChromiumStatusPage draws the status page: the bars of active
// mitigations are drawn in proportion (2 block, 1 rate_limit, twice each).
func TestChromiumStatusPage(t *testing.T) {
	img := screenshot(t, writePage(t, func(b *bytes.Buffer) error { return WriteStatusHTML(b, statusFixture()) }))
	green := chromiumtest.Pixels(img, ColorActive)
	t.Logf("%d green pixels", green)
	// Bars: 260+130 px per table, 12 px high, two tables.
	if green < 2*(260+130)*12*8/10 || green > 2*(260+130)*12*12/10 {
		t.Errorf("mitigation bars: %d green pixels, want about %d", green, 2*(260+130)*12)
	}
}

// TestChromiumSummaryFirstScreen: the first screen of each page (1100×650)
// shows the summary: the bars of clients acted on per action (replay: 1 blocked,
// 2 challenged) and of requests answered per outcome (status), in purple.
func TestChromiumSummaryFirstScreen(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  int // bar pixels: width × 12 rows
	}{
		{"replay", func(b *bytes.Buffer) error { return WriteReplayHTML(b, summaryFixture(t)) }, (130 + 260) * 12},
		{"status", func(b *bytes.Buffer) error { return WriteStatusHTML(b, statusFixture()) }, (260 + 59) * 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := chromiumtest.Screenshot(t, writePage(t, c.write), 1100, 650, chromiumtest.Isolated...)
			purple := chromiumtest.Pixels(img, ColorActed)
			t.Logf("%s: %d purple pixels on the first screen, want about %d", c.name, purple, c.want)
			if purple < c.want*8/10 || purple > c.want*12/10 {
				t.Errorf("summary bars on the first screen: %d purple pixels, want about %d", purple, c.want)
			}
		})
	}
}

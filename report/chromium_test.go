//go:build integration

package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// screenshot renders page (a file:// or http:// URL) in headless Chromium
// with name resolution and every network fetch but page's own refused, and
// returns the picture.
func screenshot(t *testing.T, url string) image.Image {
	t.Helper()
	bin := ""
	for _, b := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(b); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getuid() == 0 {
			t.Fatal("chromium is not installed (scripts/test.sh installs Debian's chromium)")
		}
		t.Skip("chromium is not installed")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--no-first-run", "--disable-background-networking",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1100,1600", "--screenshot="+out, url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("REPORT_SHOTS") != "" { // keep them to look at
		b, _ := os.ReadFile(out)
		os.WriteFile(filepath.Join(os.Getenv("REPORT_SHOTS"), t.Name()+".png"), b, 0o644)
	}
	return img
}

// pixels counts the pixels of img within 12 of the colour hex (#rrggbb).
func pixels(img image.Image, hex string) int {
	var want [3]int
	for i := range want {
		var v int
		for _, c := range hex[1+2*i : 3+2*i] {
			v = v*16 + int(bytes.IndexRune([]byte("0123456789abcdef"), c))
		}
		want[i] = v
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if abs(int(r>>8)-want[0]) <= 12 && abs(int(g>>8)-want[1]) <= 12 && abs(int(bl>>8)-want[2]) <= 12 {
				n++
			}
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
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
			blue, red, orange := pixels(img, ColorCounted), pixels(img, ColorTrips), pixels(img, ColorNear)
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
	green := pixels(img, ColorActive)
	t.Logf("%d green pixels", green)
	// Bars: 260+130 px per table, 12 px high, two tables.
	if green < 2*(260+130)*12*8/10 || green > 2*(260+130)*12*12/10 {
		t.Errorf("mitigation bars: %d green pixels, want about %d", green, 2*(260+130)*12)
	}
}

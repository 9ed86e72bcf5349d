//go:build integration

package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChromiumLiveStatusPage loads the running daemon's /status in headless
// Chromium and checks the picture: the bars of active mitigations are drawn
// (two tables, block twice as long as rate_limit).
func TestChromiumLiveStatusPage(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getuid() == 0 {
			t.Fatal("chromium is not installed (scripts/test.sh installs it)")
		}
		t.Skip("chromium is not installed")
	}
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	for _, ip := range []string{"203.0.113.7", "203.0.113.8"} {
		cli(t, append([]string{"add", "--scope", "ip.src=" + ip}, clientArgs(td)...)...)
	}
	cli(t, append([]string{"add", "--scope", "ip.src=203.0.113.9", "--action", "rate_limit"}, clientArgs(td)...)...)
	shot := filepath.Join(dir, "status.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1100,1200", "--screenshot="+shot,
		"http://"+td.d.adminLn.Addr().String()+"/status")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// report.ColorActive, #2ea05a.
	green := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0x2e) && near(g>>8, 0xa0) && near(bl>>8, 0x5a) {
				green++
			}
		}
	}
	want := 2 * (260 + 130) * 12
	t.Logf("%d green pixels, about %d expected", green, want)
	if green < want*8/10 || green > want*12/10 {
		t.Errorf("mitigation bars: %d green pixels, want about %d", green, want)
	}
}

func near(v uint32, want int) bool { d := int(v) - want; return d >= -12 && d <= 12 }

package chromiumtest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	TempDir() string
	Name() string
}

// Isolated is the flags that keep Chromium from fetching anything but the
// page: no background networking, every host name unresolvable.
var Isolated = []string{"--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND"}

// Screenshot renders url (file:// or http://) in headless Chromium in a
// window width by height pixels, with flags added, and returns the
// picture. With REPORT_SHOTS set to a directory, it keeps a copy there
// named after the test.
func Screenshot(t TB, url string, width, height int, flags ...string) image.Image {
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
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height),
		"--screenshot=" + out}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
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
	if keep := os.Getenv("REPORT_SHOTS"); keep != "" {
		b, _ := os.ReadFile(out)
		os.WriteFile(filepath.Join(keep, t.Name()+".png"), b, 0o644)
	}
	return img
}

// Pixels counts the pixels of img within 12 of the colour hex (#rrggbb)
// in each of red, green and blue.
func Pixels(img image.Image, hex string) int {
	var want [3]int
	for i := range want {
		for _, c := range hex[1+2*i : 3+2*i] {
			want[i] = want[i]*16 + bytes.IndexRune([]byte("0123456789abcdef"), c)
		}
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want[0]) && near(g>>8, want[1]) && near(bl>>8, want[2]) {
				n++
			}
		}
	}
	return n
}

func near(v uint32, want int) bool { d := int(v) - want; return d >= -12 && d <= 12 }

//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/guardd/guardd/challenge"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/nginxtest"
)

// TestChallengeNginxChromium: real nginx with docs/nginx.md's block, guardd,
// and headless Chromium driven over the DevTools protocol. Every address of
// 127.0.0.0/8 is under a challenge at the default difficulty. A browser
// solves the page and reaches the application within seconds, and keeps its
// clearance across a restart of guardd; curl and python-requests never reach
// the application; Chromium without JavaScript never passes; the clearance
// from another /24, with another User-Agent or with one byte changed is
// refused; POST and Accept: application/json get the fallback (429 with
// Retry-After); an address that keeps failing is blocked.
//
// With CHALLENGE_SHOT set to a file name, the page's screenshot is kept there.
func TestChallengeNginxChromium(t *testing.T) {
	bin := chromiumPath(t)
	nginx := nginxtest.Path(t)
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	var appHits atomic.Int64
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		appHits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><html lang=en><title>shop</title><p id=app>the application: %s</p></html>", r.URL.Path)
	})}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Serve(appLn)
	t.Cleanup(func() { app.Close() })

	// guardd on a fixed port, so that nginx finds it again after a restart;
	// ip.src.prefix is /8 so that one mitigation covers every test address.
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "login.rego"), []byte(testRule), 0o644)
	os.WriteFile(filepath.Join(dir, "rules", "gentle.rego"), []byte(gentleRule), 0o644)
	decPort := nginxtest.FreePort(t)
	format := `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent "$http_referer" "$http_user_agent" ' '$remote_port $request_time "$host" "$http_x_forwarded_for" ' '"$cookie_session" $request_id';`
	writeTestConfig(t, dir, fmt.Sprintf(`
log:
  format: %q
decision: {listen: "127.0.0.1:%d"}
characteristics: {prefix_v4: 8}
challenge: {max_unsolved: 4, block_for: 10m}
`, format, decPort))
	td := startDaemon(t, dir)
	t.Cleanup(func() { td.stop(t) })
	manual, ok, err := td.d.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionChallenge, Origin: mitigation.OriginAPI,
		Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "127.0.0.0/8"}}, Expires: time.Now().Add(time.Hour)}, time.Now())
	if err != nil || !ok {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "state", "challenge.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("challenge key file: %v %v", st, err)
	}
	port := nginxtest.FreePort(t)
	nginxtest.Start(t, nginx, dir, testNginxConf(t, dir, td, appLn.Addr().String(), port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, base+"/")

	// curl and python-requests: the fallback for their */*, the page (which
	// they cannot pass) when they ask for HTML. The application sees none.
	if code, _ := curlAs(t, "127.3.0.1", base+"/"); code != 429 {
		t.Errorf("curl: %d, want 429", code)
	}
	if code, body := curlAs(t, "127.3.0.1", base+"/", "-L", "-H", "Accept: text/html"); code != 403 || !strings.Contains(body, "Checking your browser") {
		t.Errorf("curl asking for HTML: %d, want the page", code)
	}
	out, err := exec.Command("python3", "-c", `import requests, sys
r = requests.get(sys.argv[1])
print(r.status_code, r.headers.get("Retry-After"), "the application" in r.text)`, base+"/shop").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "429 ") || !strings.Contains(string(out), "False") {
		t.Errorf("python-requests: %s %v, want 429 with Retry-After", out, err)
	}
	if n := appHits.Load(); n != 0 {
		t.Fatalf("the application saw %d requests of clients without a clearance", n)
	}

	// Chromium solves the page. The first time, the page's timers are held
	// (a script the browser runs before the page's own) so that the page
	// and its screenshot are looked at while it works: however slow the
	// CPU, a lucky counter can solve it within its first timer callback.
	ctx, stopChromium := newChromium(t, bin, filepath.Join(dir, "chromium"))
	defer stopChromium()
	hold, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: holdTimers})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/shop?item=7")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.RemoveScriptToEvaluateOnNewDocument, page.RemoveScriptToEvaluateOnNewDocumentParams{Identifier: hold.Identifier}); err != nil {
		t.Fatal(err)
	}
	var seen struct {
		H1, Status, Lang, Title string
		H1Height                float64
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({H1: document.querySelector("h1").innerText,
		H1Height: document.querySelector("h1").getBoundingClientRect().height, Status: document.querySelector('[role="status"]').innerText,
		Lang: document.documentElement.lang, Title: document.title})`))
	if err == nil {
		err = json.Unmarshal([]byte(raw), &seen)
	}
	if err != nil || seen.H1 != "Checking your browser" || seen.H1Height <= 0 || seen.Lang != "en" || seen.Title == "" || !strings.HasPrefix(seen.Status, "Working") {
		t.Fatalf("the page while it works: %+v %v", seen, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`guarddTestReleaseTimers()`)); err != nil || n == 0 {
		t.Fatalf("releasing the page's timers: %d held, %v", n, err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("app"), chromedp.NodeVisible))
	if err != nil || body != "the application: /shop" {
		t.Fatalf("after the challenge: %q %v", body, err)
	}
	// The time a person waits, unthrottled: from the challenged request to
	// the application's page, with a fresh start each time.
	var waits []time.Duration
	for i := range 9 {
		if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/shop?visit=%d", base, i)))
		if err == nil {
			body, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("app"), chromedp.NodeVisible))
		}
		if err != nil || body != "the application: /shop" {
			t.Fatalf("visit %d: %q %v", i, body, err)
		}
		waits = append(waits, time.Since(start))
	}
	slices.Sort(waits)
	t.Logf("Chromium at difficulty %d: challenged page to the application in %v (median of %d; min %v, max %v)", challenge.DefaultDifficulty,
		waits[len(waits)/2].Round(time.Millisecond), len(waits), waits[0].Round(time.Millisecond), waits[len(waits)-1].Round(time.Millisecond))
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base}})
	if err != nil {
		t.Fatal(err)
	}
	var clearance *network.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == challenge.DefaultCookie {
			clearance = c
		}
	}
	if clearance == nil || !clearance.HTTPOnly || clearance.SameSite != network.CookieSameSiteLax || clearance.Path != "/" || clearance.Secure {
		t.Fatalf("clearance cookie %+v", clearance)
	}
	ua, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		t.Fatal(err)
	}

	// guardd restarts: the key and the challenge mitigation survive, and so
	// does the browser's clearance.
	td.stop(t)
	td = startDaemon(t, dir)
	hits := appHits.Load()
	err = chromedp.Do(ctx, chromedp.Navigate(base+"/after-restart"))
	if err == nil {
		body, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("app"), chromedp.NodeVisible))
	}
	if err != nil || body != "the application: /after-restart" || appHits.Load() != hits+1 {
		t.Fatalf("after a restart of guardd: %q %v", body, err)
	}
	if n := metricValue(t, td, "guardd_challenge_shown_total"); n != 0 {
		t.Errorf("the restarted guardd showed %v challenges to a cleared browser", n)
	}

	// The clearance, replayed: from the same /24 with the browser's
	// User-Agent it is accepted (so the replay itself works); from another
	// /24, with another User-Agent or with one byte changed it is not.
	cookie := "Cookie: " + challenge.DefaultCookie + "=" + clearance.Value
	tampered := []byte(clearance.Value)
	tampered[len(tampered)/2] = map[bool]byte{true: 'A', false: 'B'}[tampered[len(tampered)/2] != 'A']
	for _, tc := range []struct {
		name, src, ua, cookie string
		want                  int
	}{
		{"same /24, same browser", "127.0.0.5", ua, cookie, 200},
		{"another /24", "127.1.0.1", ua, cookie, 403},
		{"a third /24", "127.2.0.1", ua, cookie, 403},
		{"another User-Agent", "127.0.0.6", "python-requests/2.31.0", cookie, 403},
		{"one byte changed", "127.0.0.7", ua, "Cookie: " + challenge.DefaultCookie + "=" + string(tampered), 403},
	} {
		code, body := curlAs(t, tc.src, base+"/replay", "-A", tc.ua, "-H", tc.cookie, "-H", "Accept: text/html")
		if code != tc.want || (code == 403) != strings.Contains(body, "Checking your browser") {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	// guardd saw the other networks (nginx's X-Real-IP), not 127.0.0.1.
	if n := metricValue(t, td, "guardd_challenge_clearances_checked_total", "outcome", "network"); n != 2 {
		t.Errorf("clearances refused for their network: %v, want 2", n)
	}

	// Not page views: the fallback, for a browser without a clearance too.
	hits = appHits.Load()
	for _, tc := range []struct{ method, accept string }{{"POST", "text/html"}, {"GET", "application/json"}} {
		code, hdr := curlHeaders(t, "127.4.0.1", base+"/api/cart", "-X", tc.method, "-A", ua, "-H", "Accept: "+tc.accept)
		if code != 429 || !strings.Contains(strings.ToLower(hdr), "retry-after:") {
			t.Errorf("%s with Accept %s: %d, want 429 with Retry-After\n%s", tc.method, tc.accept, code, hdr)
		}
	}

	// Chromium without JavaScript: the page and its <noscript> explanation,
	// never the application.
	nojs, stopNoJS := newChromium(t, bin, filepath.Join(dir, "chromium-nojs"))
	defer stopNoJS()
	if _, err := chromedp.Call(nojs, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var text string
		err := chromedp.Do(nojs, chromedp.Navigate(base+"/shop"))
		if err == nil {
			text, err = chromedp.Run(nojs, chromedp.Text(chromedp.CSS("main"), chromedp.NodeVisible))
		}
		if err != nil || !strings.Contains(text, "needs JavaScript") || strings.Contains(text, "the application") {
			t.Fatalf("without JavaScript, visit %d: %q %v", i, text, err)
		}
	}
	if c, _ := chromedp.Call(nojs, network.GetCookies, network.GetCookiesParams{URLs: []string{base}}); len(c.Cookies) != 0 {
		t.Errorf("a browser without JavaScript got cookies %v", c.Cookies)
	}
	if appHits.Load() != hits {
		t.Errorf("the application saw %d requests of clients that did not pass", appHits.Load()-hits)
	}

	// An address shown more than max_unsolved (4) pages without passing is
	// blocked: 403 Forbidden, no longer the page.
	for i := range 5 {
		if code, _ := curlAs(t, "127.5.0.1", base+"/", "-H", "Accept: text/html"); code != 403 {
			t.Fatalf("page %d: %d", i, code)
		}
	}
	if code, body := curlAs(t, "127.5.0.1", base+"/", "-H", "Accept: text/html"); code != 403 || strings.Contains(body, "Checking your browser") {
		t.Errorf("after 5 unsolved challenges: %d %q, want the block", code, body)
	}

	// The cookie tier (rule gentle): the browser without JavaScript passes
	// it, by following the meta refresh and keeping the cookie; curl, which
	// follows neither, does not.
	td.d.store.Delete(manual.ID)
	if _, ok, err := td.d.store.Add(mitigation.Mitigation{Rule: "gentle", Action: mitigation.ActionChallenge, Origin: mitigation.OriginRule,
		Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "127.0.0.0/8"}}, Expires: time.Now().Add(time.Hour)}, time.Now()); err != nil || !ok {
		t.Fatal(err)
	}
	if code, body := curlAs(t, "127.6.0.1", base+"/gentle", "-L", "-H", "Accept: text/html"); code != 403 || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("curl under the cookie tier: %d, want the page", code)
	}
	hits = appHits.Load()
	if err := chromedp.Do(nojs, chromedp.Navigate(base+"/gentle")); err != nil {
		t.Fatal(err)
	}
	body, err = chromedp.Run(nojs, chromedp.Text(chromedp.ID("app"), chromedp.NodeVisible))
	if err != nil || body != "the application: /gentle" || appHits.Load() != hits+1 {
		t.Fatalf("Chromium without JavaScript under the cookie tier: %q %v", body, err)
	}
	if n := metricValue(t, td, "guardd_challenge_passed_total", "rule", "gentle"); n != 1 {
		t.Errorf("passed_total{rule=gentle} = %v", n)
	}
}

// holdTimers keeps the callbacks a page gives setTimeout until the test
// calls guarddTestReleaseTimers, which runs them and returns how many.
const holdTimers = `(() => {
  const held = [], setTimeout = window.setTimeout;
  window.setTimeout = (f, ms, ...args) => { held.push(() => f(...args)); return 0; };
  window.guarddTestReleaseTimers = () => {
    window.setTimeout = setTimeout;
    for (const f of held) setTimeout(f, 0);
    return held.length;
  };
})();`

// gentleRule challenges with the cookie tier (its mitigation is added by
// the test).
const gentleRule = `# METADATA
# title: gentle
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 1000
#   action: challenge
#   challenge_tier: cookie
package guardd.rules.gentle

count if input.http.path == "/never"

mitigate if true
`

func chromiumPath(t *testing.T) string {
	for _, b := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	if os.Getuid() == 0 {
		t.Fatal("chromium is not installed")
	}
	t.Skip("chromium is not installed")
	return ""
}

// newChromium starts a headless Chromium with its own profile that can
// reach nothing but the test's addresses.
func newChromium(t *testing.T, bin, profile string) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(profile),
		chromedp.WindowSize(1024, 768), chromedp.Flag("disable-background-networking", true), chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	return ctx, func() { cancelTimeout(); cancelCtx(); cancelAlloc() }
}

// checkScreenshot: the page is not blank, and has a dark heading and text
// on its light background.
func checkScreenshot(t *testing.T, b []byte) {
	t.Helper()
	if path := os.Getenv("CHALLENGE_SHOT"); path != "" {
		os.WriteFile(path, b, 0o644)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	dark, total := 0, 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0x6000 && g < 0x6000 && bl < 0x6000 {
				dark++
			}
			total++
		}
	}
	// The heading's band: dark pixels in the upper part of the page.
	head := 0
	for y := bounds.Min.Y; y < bounds.Min.Y+bounds.Dy()/3; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r < 0x6000 && g < 0x6000 && bl < 0x6000 {
				head++
			}
		}
	}
	t.Logf("screenshot %dx%d: %d dark pixels, %d in the upper third", bounds.Dx(), bounds.Dy(), dark, head)
	if dark < total/500 || dark > total/2 || head < 500 {
		t.Errorf("the page looks blank or unreadable: %d dark pixels of %d, %d in the upper third", dark, total, head)
	}
	var _ image.Image = img
}

// curlAs runs curl from src and returns the status and the body.
func curlAs(t *testing.T, src, url string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "10", "--interface", src, "-w", "\n%{http_code}", url}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	s := string(out)
	i := strings.LastIndexByte(s, '\n')
	var code int
	fmt.Sscan(s[i+1:], &code)
	return code, s[:i]
}

// curlHeaders runs curl from src and returns the status and the headers.
func curlHeaders(t *testing.T, src, url string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "10", "--interface", src, "-o", "/dev/null", "-D", "-", "-w", "\n%{http_code}", url}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	s := string(out)
	i := strings.LastIndexByte(s, '\n')
	var code int
	fmt.Sscan(s[i+1:], &code)
	return code, s[:i]
}

// metricValue sums the samples of the counter name whose labels include
// the pairs given.
func metricValue(t *testing.T, td *testDaemon, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := td.d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

//go:build integration

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/testwait"
)

// The concurrency and shedding rules of TestNginxConcurrencyAndShedding.
var throttleTestRules = map[string]string{
	// At most 2 requests of one client in flight under /slow/.
	"slow_conc.rego": `# METADATA
# title: slow pages in flight per client
# custom:
#   characteristics: [ip.src]
#   concurrency: 2
#   action: throttle
package guardd.rules.slow_conc

count if startswith(input.http.path, "/slow/")
`,
	// Traffic classes for the shedder: shadow throttle rules that only
	// select requests.
	"pay.rego": `# METADATA
# title: payments (critical)
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 1000000
#   action: throttle
#   shadow: true
package guardd.rules.pay

count if startswith(input.http.path, "/pay")
`,
	"search.rego": `# METADATA
# title: search (best effort)
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 1000000
#   action: throttle
#   shadow: true
package guardd.rules.search

count if startswith(input.http.path, "/search")
`,
}

// TestNginxConcurrencyAndShedding runs the real nginx in front of a slow
// application, with guardd tailing nginx's log: the concurrency limit
// holds (a client's third request in flight gets 429, another client is
// served, and a slot comes back when a request's log line is read), and
// while the application is slow the shedder refuses best-effort traffic
// with 503 and Retry-After first, then the default class, while critical
// requests keep flowing; once the application is fast again, shedding
// stops.
func TestNginxConcurrencyAndShedding(t *testing.T) {
	nginx := nginxtest.Path(t)
	dir := t.TempDir()
	var (
		held    sync.WaitGroup
		holding atomic.Int64
		release = make(chan struct{})
		slowMS  atomic.Int64 // every answer but /pay takes this long
	)
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hold") == "1" {
			holding.Add(1)
			held.Add(1)
			defer held.Done()
			<-release
		}
		if !strings.HasPrefix(r.URL.Path, "/pay") {
			time.Sleep(time.Duration(slowMS.Load()) * time.Millisecond) // a slow application: the load that sheds
		}
		io.WriteString(w, "app\n")
	})}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Serve(appLn)
	t.Cleanup(func() { app.Close() })

	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	for name, text := range throttleTestRules {
		os.WriteFile(filepath.Join(dir, "rules", name), []byte(text), 0o644)
	}
	format := `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent "$http_referer" "$http_user_agent" ' '$remote_port $request_time "$host" "$http_x_forwarded_for" ' '"$cookie_session" $request_id';`
	writeTestConfig(t, dir, fmt.Sprintf(`
log:
  format: %q
shedding:
  classes:
    - {name: critical, rules: [pay]}
    - {name: default}
    - {name: best_effort, rules: [search]}
  latency: 150ms
  interval: 200ms
  hold: 1s
`, format))
	td := startDaemon(t, dir)
	port := nginxtest.FreePort(t)
	conf := testNginxConf(t, dir, td, appLn.Addr().String(), port)
	// The auth subrequest may wait behind the slow answers: give it time.
	conf = strings.Replace(conf, "proxy_read_timeout 250ms;", "proxy_read_timeout 5s;", 1)
	nginxtest.Start(t, nginx, dir, conf)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, base+"/pay/ready")

	// Concurrency: two of client a's requests held in the application.
	a, b := client("127.0.0.31"), client("127.0.0.32")
	codes := make(chan int, 2)
	for i := range 2 {
		go func() {
			resp, err := a.Get(fmt.Sprintf("%s/slow/held%d?hold=1", base, i))
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	testwait.Until(t, patience, "two requests held in the application", func() bool { return holding.Load() == 2 })
	resp := doResp(t, a, "GET", base+"/slow/third")
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || resp.Header.Get("RateLimit-Policy") != `"slow_conc";q=2` {
		t.Fatalf("third in flight: %d %v", resp.StatusCode, resp.Header)
	}
	if code, _ := do(t, b, "GET", base+"/slow/other-client"); code != 200 {
		t.Fatalf("another client: %d", code)
	}
	close(release)
	for range 2 {
		if c := <-codes; c != 200 {
			t.Fatalf("held request: %d", c)
		}
	}
	// The held requests' log lines give their slots back.
	testwait.Until(t, patience, "a slot back after the log lines", func() bool {
		code, _ := do(t, a, "GET", base+"/slow/after")
		return code == 200
	})
	t.Log("concurrency: 2 in flight held, the third refused with 429, slots back from the log lines")

	// Shedding: the application turns slow; load keeps its log busy.
	slowMS.Store(300)
	stop := make(chan struct{})
	var load sync.WaitGroup
	for i := range 4 {
		load.Go(func() {
			c := client(fmt.Sprintf("127.0.1.%d", i+1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if resp, err := c.Get(base + "/page"); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	defer func() { close(stop); load.Wait() }()
	critical := client("127.0.0.33")
	payOK := 0
	testwait.Until(t, patience, "best effort to be shed", func() bool {
		if code, _ := do(t, critical, "GET", base+"/pay/now"); code == 200 {
			payOK++
		}
		resp := doResp(t, critical, "GET", base+"/search?q=x")
		resp.Body.Close()
		return resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "1"
	})
	testwait.Until(t, patience, "the default class to be shed too", func() bool {
		code, _ := do(t, critical, "GET", base+"/home")
		return code == 503
	})
	for i := range 5 {
		if code, body := do(t, critical, "GET", base+"/pay/now"); code != 200 || body != "app\n" {
			t.Fatalf("critical request %d while shedding: %d", i, code)
		}
	}
	if code, _ := do(t, critical, "GET", base+"/search?q=y"); code != 503 {
		t.Fatalf("best effort while shedding the default class: %d", code)
	}
	t.Logf("shedding: best effort then default shed with 503; %d critical requests served meanwhile, all of the last 5", payOK+5)

	// The application is fast again: shedding steps down after its hold.
	slowMS.Store(0)
	testwait.Until(t, patience, "shedding to stop", func() bool {
		code, _ := do(t, critical, "GET", base+"/search?q=z")
		return code == 200
	})
}

//go:build integration

package throttle_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/testwait"
)

// nginxConf is docs/nginx.md's configuration, with the RateLimit headers of
// allowed requests passed on, filled in for a test on loopback.
const nginxConf = `
daemon off;
master_process on;
worker_processes 1;
user root;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log info;
events { worker_connections 256; }
http {
    access_log {{dir}}/access.log;
    client_body_temp_path {{dir}}/body;
    proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi;
    uwsgi_temp_path {{dir}}/uwsgi;
    scgi_temp_path {{dir}}/scgi;
    upstream guardd { server {{decision}}; keepalive 16; }
    upstream app { server {{app}}; }
    server {
        listen 127.0.0.1:{{port}};
        location / {
            auth_request /_guardd;
            auth_request_set $guardd_decision $upstream_http_x_guardd_decision;
            auth_request_set $guardd_ratelimit $upstream_http_ratelimit;
            auth_request_set $guardd_ratelimit_policy $upstream_http_ratelimit_policy;
            add_header RateLimit $guardd_ratelimit always;
            add_header RateLimit-Policy $guardd_ratelimit_policy always;
            error_page 401 = @guardd;
            proxy_pass http://app;
        }
        location = /_guardd {
            internal;
            proxy_pass http://guardd/v1/decide;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Real-Port $remote_port;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Original-URI $request_uri;
            proxy_set_header X-Request-ID $request_id;
            proxy_set_header Host $host;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 100ms;
            proxy_read_timeout 250ms;
            error_page 500 502 503 504 = @guardd_unreachable;
        }
        location @guardd_unreachable { return 204; }
        location @guardd {
            rewrite ^ /v1/respond break;
            proxy_pass http://guardd;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Guardd-Decision $guardd_decision;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Original-URI $request_uri;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
`

// throttleRule limits path prefix /<alg>/ to 5 a minute per client address.
func throttleRule(alg, extra string) string {
	return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 5
#   action: throttle
#   algorithm: %[1]s
%[2]spackage guardd.rules.%[1]s

count if startswith(input.http.path, "/%[1]s/")
`, alg, extra)
}

// stack is nginx in front of a test application, asking a decision
// handler whose clock the test sets.
type stack struct {
	base    string
	clock   atomic.Int64 // unix nanoseconds the decision handler reads
	appHits atomic.Int64
}

func (st *stack) now() time.Time { return time.Unix(0, st.clock.Load()) }

func startStack(t *testing.T, set *rules.Set, app http.Handler) *stack {
	t.Helper()
	nginx := nginxtest.Path(t)
	st := &stack{}
	dir := t.TempDir()
	appSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.appHits.Add(1)
		app.ServeHTTP(w, r)
	})}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go appSrv.Serve(appLn)
	t.Cleanup(func() { appSrv.Close() })

	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := decision.New(decision.Config{Store: store, Rules: set, Now: st.now})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := http1.New(http1.Config{Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	decLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, decLn) }()
	t.Cleanup(func() { cancel(); <-done; decLn.Close() })

	port := nginxtest.FreePort(t)
	nginxtest.Start(t, nginx, dir, strings.NewReplacer("{{dir}}", dir, "{{decision}}", decLn.Addr().String(), "{{app}}", appLn.Addr().String(),
		"{{port}}", strconv.Itoa(port)).Replace(nginxConf))
	st.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	st.clock.Store(time.Now().UnixNano())
	testwait.Until(t, 10*time.Second, "nginx to listen", func() bool {
		resp, err := http.Get(st.base + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	return st
}

func client(src string) *http.Client { return nginxtest.Client(src, 10*time.Second) }

type answer struct {
	code                          int
	retryAfter, rateLimit, policy string
	body                          string
}

func get(t *testing.T, c *http.Client, url string) answer {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("RateLimit"), resp.Header.Get("RateLimit-Policy"), string(b)}
}

// TestNginxThrottle runs the real nginx in front of an application, asking
// guardd's decision handler, with one throttle rule per algorithm (5 a
// minute per client address; burst 3 for token_bucket and gcra). For each:
// a burst of 12 requests from one client at one instant is admitted exactly
// as the algorithm allows, each admitted answer carrying RateLimit with a
// falling remaining and RateLimit-Policy; the rest get 429 with the
// Retry-After the algorithm computes (checked against the algorithm run on
// the same requests) and RateLimit/RateLimit-Policy; another client and
// another path are unaffected; and once the clock has moved on by the last
// Retry-After, the next request is admitted.
func TestNginxThrottle(t *testing.T) {
	algs := []struct {
		name, extra string
		admitted    int
		burst       float64
	}{
		{"sliding_window", "", 5, 0},
		{"fixed_window", "", 5, 0},
		{"sliding_log", "", 5, 0},
		{"token_bucket", "#   burst: 3\n", 3, 3},
		{"gcra", "#   burst: 3\n", 3, 3},
	}
	fs := fstest.MapFS{}
	for _, a := range algs {
		fs[a.name+".rego"] = &fstest.MapFile{Data: []byte(throttleRule(a.name, a.extra))}
	}
	set, err := rules.Load(fs, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := startStack(t, set, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app\n") }))
	// Mid-window, so the window algorithms' waits differ.
	t0 := time.Now().Truncate(time.Minute).Add(30*time.Second + 250*time.Millisecond)
	st.clock.Store(t0.UnixNano())
	a, b := client("127.0.0.21"), client("127.0.0.22")
	for _, alg := range algs {
		t.Run(alg.name, func(t *testing.T) {
			st.clock.Store(t0.UnixNano())
			algo, _ := counting.ParseAlgorithm(alg.name)
			ref, err := counting.NewTable(counting.Config{Limit: counting.Limit{Algorithm: algo, Period: time.Minute, Requests: 5, Burst: alg.burst}})
			if err != nil {
				t.Fatal(err)
			}
			url := st.base + "/" + alg.name + "/items"
			policy := fmt.Sprintf(`"%s";q=5;w=60`, alg.name)
			hits := st.appHits.Load()
			var last answer
			admitted := 0
			for i := range 12 {
				res := ref.Admit(1, 1, t0.UnixNano())
				got := get(t, a, url)
				if !res.Exceeded {
					admitted++
					want := fmt.Sprintf(`"%s";r=%d;t=%d`, alg.name, alg.admitted-admitted, reset(res.Reset))
					if got.code != 200 || got.body != "app\n" || got.rateLimit != want || got.policy != policy {
						t.Fatalf("request %d: %+v, want 200 RateLimit %s Policy %s", i+1, got, want, policy)
					}
					continue
				}
				want := strconv.FormatInt(ceilSeconds(res.RetryAfter), 10)
				if got.code != 429 || got.retryAfter != want || got.rateLimit != fmt.Sprintf(`"%s";r=0;t=%s`, alg.name, want) || got.policy != policy {
					t.Fatalf("request %d: %+v, want 429 Retry-After %s", i+1, got, want)
				}
				last = got
			}
			if admitted != alg.admitted {
				t.Fatalf("admitted %d, want %d", admitted, alg.admitted)
			}
			if n := st.appHits.Load() - hits; n != int64(alg.admitted) {
				t.Errorf("the app saw %d requests, want %d", n, alg.admitted)
			}
			t.Logf("%s: %d admitted, then 429 with Retry-After %s, RateLimit %s", alg.name, admitted, last.retryAfter, last.rateLimit)
			// Another client, and another path, are unaffected.
			if got := get(t, b, url); got.code != 200 || got.rateLimit != fmt.Sprintf(`"%s";r=%d;t=%d`, alg.name, alg.admitted-1, reset(ref.Admit(2, 1, t0.UnixNano()).Reset)) {
				t.Errorf("another client: %+v", got)
			}
			if got := get(t, a, st.base+"/elsewhere"); got.code != 200 || got.rateLimit != "" || got.policy != "" {
				t.Errorf("another path: %+v", got)
			}
			// The clock moves on by the last Retry-After: admitted.
			wait, _ := strconv.Atoi(last.retryAfter)
			st.clock.Store(t0.Add(time.Duration(wait) * time.Second).UnixNano())
			if got := get(t, a, url); got.code != 200 || got.rateLimit == "" {
				t.Errorf("after Retry-After %ds: %+v", wait, got)
			}
		})
	}
}

// reset is the t of an allowed answer's RateLimit: whole seconds, rounded up.
func reset(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return ceilSeconds(d)
}

func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return max(s, 1)
}

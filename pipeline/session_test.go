package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/guardd/guardd/config"
)

// sessionRule blocks a client on its third POST made before any GET: it
// reads session.post_without_get, which only the session stage knows.
const sessionRule = `# METADATA
# title: posts without a get
# custom:
#   characteristics: [ip.src]
#   period: 1h
#   requests_per_period: 0.5
#   action: block
package guardd.rules.posts_first

count if input.session.post_without_get >= 3
`

// cookieFormat is combined with the session cookie: a log that can tell a
// browser's session.
const cookieFormat = `log_format c '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$cookie_session"';`

// TestSessionsAcrossBatches: the session stage fills session.* in input
// order, whatever the worker that parsed or evaluates a batch, and a
// session carries over from batch to batch. A log without cookies keeps
// no session: session.* is absent.
func TestSessionsAcrossBatches(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "posts_first.rego"), []byte(sessionRule), 0o644)
	line := func(ip, method string, i int) string {
		at := wall.Add(-time.Hour + time.Duration(i)*100*time.Millisecond)
		return fmt.Sprintf(`%s - - [%s] "%s /contact HTTP/1.1" 200 12 "-" "Mozilla/5.0 (X11)" "-"`, ip, at.Format("02/Jan/2006:15:04:05 -0700"), method)
	}
	// 3 x 2048 lines: the POSTs of each client fall in three batches.
	var src lines
	for i := range 3 * batchLines {
		switch i {
		case 10, 2100, 4200: // a form spammer: POST, POST, POST
			src = append(src, line("203.0.113.7", "POST", i))
		case 11: // a person: the form, then three tries
			src = append(src, line("203.0.113.8", "GET", i))
		case 12, 2101, 4201:
			src = append(src, line("203.0.113.8", "POST", i))
		default:
			src = append(src, line(fmt.Sprintf("198.51.%d.%d", i>>8, i&255), "GET", i))
		}
	}
	for _, c := range []struct {
		name    string
		format  string
		workers int
		want    string // the address mitigated, "" for none
	}{
		{"1 worker", cookieFormat, 1, "203.0.113.7"},
		{"4 workers", cookieFormat, 4, "203.0.113.7"},
		{"no cookies in the log", `log_format c '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_unused"';`, 4, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\nlog: {format: %q}\n", dir, c.format)))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Build(cfg, BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			h := NewHolder(p)
			defer h.Close()
			store := newStore(t)
			st, err := Run(context.Background(), Config{Pipelines: h, Store: store, Workers: c.workers, Replay: true,
				Now: func() time.Time { return wall }}, src)
			if err != nil || st.Malformed != 0 {
				t.Fatalf("run: %v, %d malformed lines", err, st.Malformed)
			}
			ms := store.List(wall.Add(-time.Hour))
			switch {
			case c.want == "" && len(ms) != 0:
				t.Fatalf("mitigations %v, want none", ms)
			case c.want != "" && (len(ms) != 1 || ms[0].Scope[0].Value != c.want):
				t.Fatalf("mitigations %v, want one of %s", ms, c.want)
			}
		})
	}
}

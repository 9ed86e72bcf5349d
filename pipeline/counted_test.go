package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/counting"
)

const probeRule = `# METADATA
# title: test probe
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 100
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.probe

count if input.http.path == "/probe"
`

// TestMatchesSkipCountedRequests: the matches metric, which workers count
// per batch, leaves out the log lines of requests already counted at
// decision time, which only the sequencer knows.
func TestMatchesSkipCountedRequests(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "probe.rego"), []byte(probeRule), 0o644)
	const format = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_id`
	cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\nlog: {format: '%s'}\ndecision: {count: true}\n", dir, format)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Rules().Rules()[0].RequestTime {
		t.Fatal("probe rule not request-time")
	}
	seen, err := counting.NewSeen(100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var src lines
	for i := range 5 {
		id := fmt.Sprintf("%032x", i+1)
		src = append(src, logLine("203.0.113.7", "/probe", 404, wall)+" "+id)
		if i < 2 {
			seen.Add(counting.HashString(id)|1, wall.UnixNano())
		}
	}
	src = append(src, logLine("203.0.113.7", "/other", 404, wall)+" -")
	h := NewHolder(p)
	defer h.Close()
	m := NewMetrics(nil)
	st, err := Run(context.Background(), Config{Pipelines: h, Store: newStore(t), Metrics: m, Counted: seen, Now: func() time.Time { return wall }}, src)
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 6 {
		t.Fatalf("events %d, want 6 (errors %v)", st.Events, st.Errors)
	}
	if got := testutil.ToFloat64(m.Matches.WithLabelValues("probe")); got != 3 {
		t.Errorf("matches of probe = %v, want 3 (5 lines, 2 counted at decision time)", got)
	}
}

package pipeline

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// hostLines is a Source of lines sent by one host, marked every markEvery
// lines with the number of lines written so far.
type hostLines struct {
	host      string
	n         int
	markEvery int
}

func (s hostLines) Read(ctx context.Context, w *Writer) error {
	for i := range s.n {
		l := logLine("203.0.113.9", fmt.Sprintf("/%s/%d", s.host, i), 200, wall.Add(-time.Minute))
		if err := w.LineFrom([]byte(l), s.host, int64(i+1), s.host); err != nil {
			return err
		}
		if (i+1)%s.markEvery == 0 {
			if err := w.Mark(hostMark{s.host, i + 1}); err != nil {
				return err
			}
		}
	}
	return nil
}

type hostMark struct {
	host string
	n    int
}

// TestMerge: the lines of merged Sources are all read once, each carries its
// Source's syslog.host, and each Source's marks reach Applied in the order
// it wrote them.
func TestMerge(t *testing.T) {
	h := NewHolder(build(t, ""))
	defer h.Close()
	var mu sync.Mutex
	hosts := map[string]int{}
	last := map[string]int{}
	cfg := Config{Pipelines: h, Store: newStore(t), Now: func() time.Time { return wall },
		Observe: func(ev *characteristics.Event) {
			mu.Lock()
			hosts[ev.SyslogHost]++
			mu.Unlock()
		},
		Applied: func(mark any, st *Stats) {
			m := mark.(hostMark)
			if m.n <= last[m.host] {
				t.Errorf("mark %v after %d", m, last[m.host])
			}
			last[m.host] = m.n
		}}
	st, err := Run(context.Background(), cfg, Merge(hostLines{"a", 5000, 7}, hostLines{"b", 3000, 100}, hostLines{"", 1000, 1000}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 9000 || st.Events != 9000 || st.Malformed != 0 {
		t.Fatalf("stats %+v, want 9000 lines and events", st)
	}
	if hosts["a"] != 5000 || hosts["b"] != 3000 || hosts[""] != 1000 {
		t.Errorf("events by syslog.host %v", hosts)
	}
	if last["a"] != 4998 || last["b"] != 3000 || last[""] != 1000 {
		t.Errorf("last marks %v", last)
	}
}

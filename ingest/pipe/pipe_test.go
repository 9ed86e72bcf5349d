package pipe

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/testwait"
)

type lines struct {
	mu    sync.Mutex
	got   []string
	marks int
}

func (l *lines) Line(data []byte, file string, n int64) error {
	l.mu.Lock()
	l.got = append(l.got, fmt.Sprintf("%s:%d:%s", file, n, data))
	l.mu.Unlock()
	return nil
}

func (l *lines) Mark(any) error { l.mu.Lock(); l.marks++; l.mu.Unlock(); return nil }

func (l *lines) len() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.got) }

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 20)
	for _, tt := range []struct {
		name, in string
		want     []string
		cut      int64
	}{
		{"lines", "a\nb\r\nc\n", []string{"stdin:1:a", "stdin:2:b", "stdin:3:c"}, 0},
		{"unterminated last", "a\nb", []string{"stdin:1:a", "stdin:2:b"}, 0},
		{"cut", "a\n" + long + "\nb\n", []string{"stdin:1:a", "stdin:2:" + long[:8], "stdin:3:b"}, 1},
		{"cut at the end", long, []string{"stdin:1:" + long[:8]}, 1},
		{"empty", "", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w lines
			r := New(strings.NewReader(tt.in), "stdin", 8)
			if err := r.Read(context.Background(), &w); err != nil {
				t.Fatal(err)
			}
			if strings.Join(w.got, "|") != strings.Join(tt.want, "|") || r.Stats.CutLines.Load() != tt.cut {
				t.Errorf("got %q (cut %d), want %q", w.got, r.Stats.CutLines.Load(), tt.want)
			}
		})
	}
}

// TestReadFollowsAPipe: lines written to a pipe that stays open are handed
// over as they come, and Read returns nil when ctx ends while it waits.
func TestReadFollowsAPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	var w lines
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(pr, "stdin", 0).Read(ctx, &w) }()
	for i := range 3 {
		fmt.Fprintf(pw, "line %d\n", i)
		testwait.Until(t, 10*time.Second, fmt.Sprintf("line %d to be handed over while the pipe stays open", i), func() bool { return w.len() == i+1 })
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not return when ctx ended")
	}
}

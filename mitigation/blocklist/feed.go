package blocklist

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Feed names, the last element of the request path.
const (
	FeedIPv4 = "ipv4.txt"
	FeedIPv6 = "ipv6.txt"
	FeedAll  = "all.txt"
)

// Config configures a Handler. The zero value lists block and firewall
// mitigations.
type Config struct {
	// Actions are the actions listed; default block and firewall.
	Actions []string `yaml:"actions"`
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time `yaml:"-"`
}

// Handler serves the plain-text feeds. It is an http.Handler and starts
// nothing.
type Handler struct {
	store    Store
	acts     actionSet
	now      func() time.Time
	log      *slog.Logger
	requests *prometheus.CounterVec
	rebuilds prometheus.Counter

	mu     sync.Mutex
	valid  bool
	cursor uint64
	feeds  [3]feed // v4, v6, all
}

type feed struct {
	body []byte
	etag string
	mod  time.Time
}

// NewHandler validates cfg. A nil reg registers no metrics; a nil log
// discards.
func NewHandler(cfg Config, store Store, reg prometheus.Registerer, log *slog.Logger) (*Handler, error) {
	if store == nil {
		return nil, fmt.Errorf("blocklist: nil store")
	}
	acts, err := parseActions(cfg.Actions)
	if err != nil {
		return nil, fmt.Errorf("blocklist: %w", err)
	}
	h := &Handler{store: store, acts: acts, now: cfg.Now, log: log}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardd_blocklist_requests_total",
		Help: "Blocklist feed requests, by result (ok, not_modified, not_found).",
	}, []string{"result"})
	h.rebuilds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardd_blocklist_rebuilds_total",
		Help: "Times the feeds were rebuilt because the mitigation table changed.",
	})
	if reg != nil {
		reg.MustRegister(h.requests, h.rebuilds)
	}
	return h, nil
}

// ServeHTTP serves GET and HEAD of .../ipv4.txt, .../ipv6.txt and
// .../all.txt, wherever the handler is mounted, with a strong ETag and
// Last-Modified, answering If-None-Match and If-Modified-Since with 304.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	idx := -1
	switch path.Base(r.URL.Path) {
	case FeedIPv4:
		idx = 0
	case FeedIPv6:
		idx = 1
	case FeedAll:
		idx = 2
	}
	if idx < 0 {
		h.requests.WithLabelValues("not_found").Inc()
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	f := h.current(h.now())[idx]
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "no-cache")
	rw := &statusWriter{ResponseWriter: w}
	http.ServeContent(rw, r, "", f.mod, bytes.NewReader(f.body))
	if rw.code == http.StatusNotModified {
		h.requests.WithLabelValues("not_modified").Inc()
	} else {
		h.requests.WithLabelValues("ok").Inc()
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(c int) {
	s.code = c
	s.ResponseWriter.WriteHeader(c)
}

// current returns the feeds, rebuilt if the change feed moved since they
// were built.
func (h *Handler) current(now time.Time) [3]feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.valid {
		if _, _, cur, ok := h.store.Changes(h.cursor); ok && cur == h.cursor {
			return h.feeds
		}
	}
	ms, cur := h.store.Snapshot(now)
	ps := prefixes(ms, h.acts)
	var v4, v6 []byte
	for _, p := range ps {
		if p.Addr().Is4() {
			v4 = append(appendPrefix(v4, p), '\n')
		} else {
			v6 = append(appendPrefix(v6, p), '\n')
		}
	}
	all := make([]byte, 0, len(v4)+len(v6))
	all = append(append(all, v4...), v6...)
	mod := now.UTC().Truncate(time.Second)
	for i, body := range [][]byte{v4, v6, all} {
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		if h.valid && etag == h.feeds[i].etag {
			continue // unchanged: keep its Last-Modified
		}
		h.feeds[i] = feed{body: body, etag: etag, mod: mod}
	}
	h.valid, h.cursor = true, cur
	h.rebuilds.Inc()
	return h.feeds
}

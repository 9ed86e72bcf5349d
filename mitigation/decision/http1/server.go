package http1

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// Handler answers one request. It runs on the event loop: it must not
// block, and it must not keep the request's strings after it returns.
type Handler interface {
	ServeHTTP1(w *Response, r *Request)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w *Response, r *Request)

// ServeHTTP1 calls f.
func (f HandlerFunc) ServeHTTP1(w *Response, r *Request) { f(w, r) }

// Config configures a Server. Zero values mean the defaults.
type Config struct {
	Handler Handler // required
	// Loops is the number of event loops, each on its own thread. Default
	// 1, which serves tens of thousands of requests a second; add loops
	// when handlers are slow (a Rego rule that fell back to the
	// interpreter) or the machine has cores to spare.
	Loops int
	// MaxConns caps open connections; past it new ones are closed at once.
	// Default 16384.
	MaxConns int
	// MaxHeadBytes caps a request head (request-line and headers); past it
	// the answer is 431. Default 16 KiB.
	MaxHeadBytes int
	// MaxHeaders caps the number of header fields (431). Default 100.
	MaxHeaders int
	// IdleTimeout closes a kept-alive connection with no request for that
	// long. Default 5 minutes: longer than nginx's upstream
	// keepalive_timeout (60 s), so nginx, not guardd, closes idle ones and
	// never sends a request on a connection guardd is closing.
	IdleTimeout time.Duration
	// HeadTimeout closes a connection whose request head is still
	// incomplete that long after its first byte, or that has not read
	// its answers for that long. Default 10 s.
	HeadTimeout time.Duration
	Logger      *slog.Logger
}

// Stats are a Server's counters since it was made.
type Stats struct {
	Conns       int64 // open now
	Accepted    int64
	Rejected    int64 // closed at once: MaxConns reached
	BadRequests int64 // heads answered 400, 431, 501 or 505
	Timeouts    int64 // connections closed by IdleTimeout or HeadTimeout
	Panics      int64 // handler panics, answered 500
}

// Server serves HTTP/1.1 on a listener from event loops.
type Server struct {
	cfg   Config
	lim   limits
	stats struct {
		conns, accepted, rejected, bad, timeouts, panics atomic.Int64
	}
}

// New validates cfg and fills in the defaults. It starts nothing.
func New(cfg Config) (*Server, error) {
	if cfg.Handler == nil {
		return nil, errors.New("http1: no handler")
	}
	if cfg.Loops < 0 || cfg.MaxConns < 0 || cfg.MaxHeadBytes < 0 || cfg.MaxHeaders < 0 || cfg.IdleTimeout < 0 || cfg.HeadTimeout < 0 {
		return nil, errors.New("http1: negative limit")
	}
	if cfg.Loops > 64 {
		return nil, errors.New("http1: more than 64 loops")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.Loops, 1)
	def(&cfg.MaxConns, 16384)
	def(&cfg.MaxHeadBytes, 16<<10)
	def(&cfg.MaxHeaders, 100)
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.HeadTimeout == 0 {
		cfg.HeadTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, lim: limits{maxHeadBytes: cfg.MaxHeadBytes, maxHeaders: cfg.MaxHeaders}}, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	return Stats{
		Conns:       s.stats.conns.Load(),
		Accepted:    s.stats.accepted.Load(),
		Rejected:    s.stats.rejected.Load(),
		BadRequests: s.stats.bad.Load(),
		Timeouts:    s.stats.timeouts.Load(),
		Panics:      s.stats.panics.Load(),
	}
}

package shadowban

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Route is one shadow-ban answer.
type Route struct {
	Method      string            `yaml:"method"` // "" matches any method
	Path        string            `yaml:"path"`   // exact, or a prefix ending in '*'
	Status      int               `yaml:"status"` // 0 means 200
	ContentType string            `yaml:"content_type"`
	Body        string            `yaml:"body"`
	Headers     map[string]string `yaml:"headers"` // added to Config.Headers, replacing those of the same name

	header [][2]string // Config.Headers then Headers, canonical names, sorted
}

// Config lists the routes; Default answers requests no route matches.
type Config struct {
	Routes  []Route `yaml:"routes"`
	Default *Route  `yaml:"default"`
	// Headers go on every answer: the headers the real application sends
	// (nginx adds Server and Date itself). Nothing else is added but
	// Content-Type and Content-Length.
	Headers map[string]string `yaml:"headers"`
}

// Responder writes shadow-ban answers. It is safe for concurrent use, Set
// included: an answer is written from the routes in force when it began.
type Responder struct {
	cur atomic.Pointer[table]
}

// table is one Config, compiled.
type table struct {
	routes []Route
	def    Route
}

// checkHeader refuses what would break the answer or give it away.
func checkHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	}) >= 0 {
		return fmt.Errorf("header name %q: want an HTTP token such as X-Request-Id", name)
	}
	switch http.CanonicalHeaderKey(name) {
	case "Content-Length", "Transfer-Encoding", "Connection":
		return fmt.Errorf("header %s: set by the server, not configurable", name)
	case "Content-Type":
		return fmt.Errorf("header %s: use content_type", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("header %s: value holds a line break or NUL", name)
	}
	return nil
}

// New validates cfg.
func New(cfg Config) (*Responder, error) {
	t, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	r := &Responder{}
	r.cur.Store(t)
	return r, nil
}

// Set replaces the routes, headers and templates with cfg's (a reload); on
// an error the running ones stay.
func (r *Responder) Set(cfg Config) error {
	t, err := compile(cfg)
	if err != nil {
		return err
	}
	r.cur.Store(t)
	return nil
}

func compile(cfg Config) (*table, error) {
	r := &table{def: Route{Status: 200, ContentType: "application/json", Body: "{}"}}
	if cfg.Default != nil {
		r.def = *cfg.Default
	}
	all := append(append([]Route(nil), cfg.Routes...), r.def)
	for i := range all {
		rt := &all[i]
		where := fmt.Sprintf("shadowban.routes[%d]", i)
		if i == len(all)-1 {
			where = "shadowban.default"
		}
		if rt.Status == 0 {
			rt.Status = 200
		}
		if rt.Status < 200 || rt.Status > 299 {
			return nil, fmt.Errorf("%s: status %d: a shadow ban answers with success, want 200 to 299", where, rt.Status)
		}
		merged := map[string]string{}
		for _, hs := range []map[string]string{cfg.Headers, rt.Headers} {
			for k, v := range hs {
				if err := checkHeader(k, v); err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				merged[http.CanonicalHeaderKey(k)] = v
			}
		}
		rt.header = nil
		for k, v := range merged {
			rt.header = append(rt.header, [2]string{k, v})
		}
		slices.SortFunc(rt.header, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		if i < len(all)-1 && !strings.HasPrefix(rt.Path, "/") {
			return nil, fmt.Errorf("%s: path %q: want an absolute path, optionally ending in '*'", where, rt.Path)
		}
		if rt.ContentType == "" {
			rt.ContentType = "application/json"
		}
		rt.Method = strings.ToUpper(rt.Method)
	}
	r.routes, r.def = all[:len(all)-1], all[len(all)-1]
	return r, nil
}

// Match returns the route for a request.
func (r *Responder) Match(method, path string) *Route { return r.cur.Load().match(method, path) }

func (r *table) match(method, path string) *Route {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	for i := range r.routes {
		rt := &r.routes[i]
		if rt.Method != "" && rt.Method != method {
			continue
		}
		if p, ok := strings.CutSuffix(rt.Path, "*"); ok {
			if strings.HasPrefix(path, p) {
				return rt
			}
		} else if rt.Path == path {
			return rt
		}
	}
	return &r.def
}

// Write answers w as the route for method and path says: its status, its
// configured headers, Content-Type, Content-Length and the body, nothing else
// (no Cache-Control unless configured: the application's answer decides).
func (r *Responder) Write(w http.ResponseWriter, method, path string, now time.Time) {
	rt := r.Match(method, path)
	body := expand(rt.Body, now)
	h := w.Header()
	for _, kv := range rt.header {
		h.Set(kv[0], expand(kv[1], now))
	}
	h.Set("Content-Type", rt.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rt.Status)
	if method != http.MethodHead {
		w.Write([]byte(body))
	}
}

func expand(body string, now time.Time) string {
	if !strings.Contains(body, "${") {
		return body
	}
	return strings.NewReplacer(
		"${id}", randomHex(8),
		"${uuid}", uuid(),
		"${now}", now.UTC().Format(time.RFC3339),
		"${unix}", strconv.FormatInt(now.Unix(), 10),
	).Replace(body)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

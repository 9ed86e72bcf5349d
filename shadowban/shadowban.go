package shadowban

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Route is one shadow-ban answer.
type Route struct {
	Method      string            `yaml:"method"` // "" matches any method
	Path        string            `yaml:"path"`   // exact, or a prefix ending in '*'
	Status      int               `yaml:"status"` // 0 means 200
	ContentType string            `yaml:"content_type"`
	Body        string            `yaml:"body"`
	Headers     map[string]string `yaml:"headers"`
}

// Config lists the routes; Default answers requests no route matches.
type Config struct {
	Routes  []Route `yaml:"routes"`
	Default *Route  `yaml:"default"`
}

// Responder writes shadow-ban answers. It is safe for concurrent use.
type Responder struct {
	routes []Route
	def    Route
}

// New validates cfg.
func New(cfg Config) (*Responder, error) {
	r := &Responder{def: Route{Status: 200, ContentType: "application/json", Body: "{}"}}
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
func (r *Responder) Match(method, path string) *Route {
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

// Write answers w as the route for method and path says.
func (r *Responder) Write(w http.ResponseWriter, method, path string, now time.Time) {
	rt := r.Match(method, path)
	body := expand(rt.Body, now)
	h := w.Header()
	for k, v := range rt.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", rt.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
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

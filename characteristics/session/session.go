package session

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strings"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
)

// Defaults of Config's zero fields.
const (
	DefaultSlots = 1 << 16
	DefaultIdle  = 30 * time.Minute
	ways         = 4 // slots per set
)

// Config configures a Table. The zero value is usable.
type Config struct {
	// Slots bounds the clients held, rounded up to a power of two of at
	// least 64; 0 means DefaultSlots (2.5 MiB).
	Slots int
	// Idle ends a session after this long without a request; 0 means
	// DefaultIdle.
	Idle time.Duration
}

// Obs is what one request says of its client's habits.
type Obs uint16

// Observations of a request.
const (
	ObsPage    Obs = 1 << iota // a page view: GET or HEAD of a document
	ObsAsset                   // a style, script, image or font
	ObsReferer                 // it sent a Referer
	ObsCookie                  // it sent a cookie
	ObsGet                     // GET or HEAD
	ObsPost                    // POST
	ObsHTTP10                  // HTTP/1.0
	ObsHTTPNew                 // HTTP/1.1, 2 or 3
	// ObsCookies: the source carries the request's cookies (a log format
	// with $http_cookie or a $cookie_name). Without it every client would
	// seem to send none, so a session never told is not cookie_never.
	ObsCookies
)

// Request is one event as the Table needs it: its client's key, its time
// and what it says.
type Request struct {
	Key  uint64 // never 0
	Time int64  // unix nanoseconds
	Obs  Obs
	// Page is the bit of a page view's path (without its query) in the
	// session's 64-bit set of pages seen: distinct pages are counted, so
	// a dashboard refreshing one page is one page.
	Page uint8
}

// Of works out the Request of e (with its address set);
// cookies says e's source carries cookies (ObsCookies). It reads only e and
// allocates nothing, so the pipeline's workers call it in parallel.
func Of(e *characteristics.Event, cookies bool) Request {
	r := Request{Key: key(e), Time: e.Time.UnixNano()}
	if cookies {
		r.Obs |= ObsCookies
	}
	switch e.Method {
	case "GET", "HEAD":
		r.Obs |= ObsGet
		switch kind(e.Path) {
		case kindPage:
			if _, xhr := e.Header("x-requested-with"); !xhr {
				r.Obs |= ObsPage
				r.Page = uint8(counting.HashString(e.Path) & 63)
			}
		case kindAsset:
			r.Obs |= ObsAsset
		}
	case "POST":
		r.Obs |= ObsPost
	}
	if e.Referer != "" && e.Referer != "-" {
		r.Obs |= ObsReferer
	}
	if len(e.Cookies) > 0 {
		r.Obs |= ObsCookie
	}
	switch e.Protocol {
	case "HTTP/1.0":
		r.Obs |= ObsHTTP10
	case "HTTP/1.1", "HTTP/2", "HTTP/2.0", "HTTP/3", "HTTP/3.0":
		r.Obs |= ObsHTTPNew
	}
	return r
}

// key hashes the client's address; never 0.
func key(e *characteristics.Event) uint64 {
	a := e.IP.As16()
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	k := mix(hi ^ mix(lo^0x9e3779b97f4a7c15))
	if k == 0 {
		k = 1
	}
	return k
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

type pathKind uint8

const (
	kindOther pathKind = iota
	kindPage
	kindAsset
)

// api reports whether path is an API, XHR, feed or framework endpoint's
// (/api/ anywhere, /graphql, /wp-json/, /.well-known/ ...): neither a page
// nor an asset. It looks at the second byte first, so most paths cost a
// search for /api/ and one comparison.
func api(path string) bool {
	if len(path) < 2 {
		return false
	}
	if strings.Contains(path, "/api/") {
		return true
	}
	var cands []string
	switch path[1] | 0x20 {
	case 'a':
		cands = apiA
	case 'c':
		cands = apiC
	case 'f':
		cands = apiF
	case 'g':
		cands = apiG
	case 'h':
		cands = apiH
	case 'm':
		cands = apiM
	case 'r':
		cands = apiR
	case 's':
		cands = apiS
	case 'w':
		cands = apiW
	case 'x':
		cands = apiX
	case '_' | 0x20:
		cands = apiUnderscore
	case '.':
		cands = apiDot
	default:
		return false
	}
	for _, p := range cands {
		if len(path) >= len(p) && strings.EqualFold(path[:len(p)], p) {
			return true
		}
	}
	return false
}

// The API prefixes by their first letter ('_' | 0x20 is '_').
var (
	apiA          = []string{"/api/", "/ajax"}
	apiC          = []string{"/cdn-cgi/"}
	apiF          = []string{"/feed"}
	apiG          = []string{"/graphql"}
	apiH          = []string{"/health"}
	apiM          = []string{"/metrics"}
	apiR          = []string{"/rest/", "/rss"}
	apiS          = []string{"/socket.io/", "/sockjs"}
	apiW          = []string{"/wp-json/", "/webhook"}
	apiX          = []string{"/xhr/"}
	apiUnderscore = []string{"/__"}
	apiDot        = []string{"/.well-known/"}
)

// kind tells a page (no extension, or a document's) from an asset (a
// style, script, image or font's extension) and from anything else (an
// API, a download, a feed).
func kind(path string) pathKind {
	seg := path[strings.LastIndexByte(path, '/')+1:]
	dot := strings.LastIndexByte(seg, '.')
	if dot >= 0 {
		ext := seg[dot+1:]
		if len(ext) > 8 {
			return kindOther
		}
		var b [8]byte
		for i := 0; i < len(ext); i++ {
			c := ext[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		switch string(b[:len(ext)]) {
		case "html", "htm", "php", "asp", "aspx", "jsp", "shtml", "cgi", "":
		case "css", "js", "mjs", "map", "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico",
			"woff", "woff2", "ttf", "otf", "eot":
			return kindAsset
		default:
			return kindOther
		}
	}
	if api(path) {
		return kindOther
	}
	return kindPage
}

// slot flags.
const (
	fAsset uint8 = 1 << iota
	fReferer
	fCookie
	fGet
	fHTTP10
	fHTTPNew
	fCookies // a request's source carried cookies
)

// slot is one client's session: 40 bytes (TestSlotSize).
type slot struct {
	key                          uint64 // 0: free
	last                         int64  // unix nanoseconds of its newest request
	seen                         uint64 // bits of the pages viewed (Request.Page)
	reqs, pages, bare, postNoGet uint16 // saturating; bare: distinct pages viewed before any asset
	flags                        uint8
}

// Table holds the sessions. It is not safe for concurrent use.
type Table struct {
	cfg       Config
	idle      int64
	slots     []slot
	sets      uint64 // mask of set indexes
	evictions uint64
}

// New makes a Table of cfg.
func New(cfg Config) *Table {
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	n := max(64, 1<<bits.Len(uint(cfg.Slots-1)))
	return &Table{cfg: cfg, idle: int64(cfg.Idle), slots: make([]slot, n), sets: uint64(n/ways - 1)}
}

// Observe adds r to its client's session (a new one after Idle) and
// returns the session as of r.
func (t *Table) Observe(r Request) characteristics.Session {
	s := t.find(r.Key, r.Time)
	s.last = max(s.last, r.Time)
	o := r.Obs
	inc(&s.reqs)
	if o&ObsAsset != 0 {
		s.flags |= fAsset
	}
	if o&ObsPage != 0 {
		inc(&s.pages)
		if bit := uint64(1) << (r.Page & 63); s.seen&bit == 0 {
			s.seen |= bit
			if s.flags&fAsset == 0 {
				inc(&s.bare)
			}
		}
	}
	if o&ObsReferer != 0 {
		s.flags |= fReferer
	}
	if o&ObsCookie != 0 {
		s.flags |= fCookie
	}
	if o&ObsGet != 0 {
		s.flags |= fGet
	}
	if o&ObsPost != 0 && s.flags&fGet == 0 {
		inc(&s.postNoGet)
	}
	if o&ObsHTTP10 != 0 {
		s.flags |= fHTTP10
	}
	if o&ObsHTTPNew != 0 {
		s.flags |= fHTTPNew
	}
	if o&ObsCookies != 0 {
		s.flags |= fCookies
	}
	out := characteristics.Session{Known: true, Requests: uint32(s.reqs), Pages: uint32(s.pages), PostsWithoutGet: uint32(s.postNoGet)}
	if s.flags&fAsset == 0 {
		out.PagesWithoutAssets = uint32(s.bare)
	}
	if s.flags&(fHTTP10|fHTTPNew) == fHTTP10|fHTTPNew {
		out.Flags |= characteristics.SessionProtoChanged
	}
	if s.flags&fReferer == 0 {
		out.Flags |= characteristics.SessionRefererNever
	}
	if s.flags&(fCookies|fCookie) == fCookies {
		out.Flags |= characteristics.SessionCookieNever
	}
	return out
}

// inc adds one to *n, staying at its maximum.
func inc(n *uint16) {
	if *n < math.MaxUint16 {
		*n++
	}
}

// find returns key's live session, or a slot made fresh for it: a free
// slot of its set, else an idle one, else the least recently seen.
func (t *Table) find(key uint64, now int64) *slot {
	base := (key & t.sets) * ways
	set := t.slots[base : base+ways]
	victim, rank := 0, 3
	for i := range set {
		s := &set[i]
		if s.key == key {
			if now-s.last > t.idle {
				*s = slot{key: key, last: now}
			}
			return s
		}
		r := 2 // live
		switch {
		case s.key == 0:
			r = 0
		case now-s.last > t.idle:
			r = 1
		}
		if r < rank || r == rank && s.last < set[victim].last {
			victim, rank = i, r
		}
	}
	if rank == 2 {
		t.evictions++
	}
	v := &set[victim]
	*v = slot{key: key, last: now}
	return v
}

// Evictions returns how many live sessions were forgotten to make room.
func (t *Table) Evictions() uint64 { return t.evictions }

// Slots returns the table's size in slots.
func (t *Table) Slots() int { return len(t.slots) }

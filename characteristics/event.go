package characteristics

import (
	"net/netip"
	"strings"
	"time"

	"github.com/guardd/guardd/characteristics/bots"
)

// Source says which ingester produced an event. Its String is a closed set, safe
// as a metric label.
type Source uint8

// Sources of events.
const (
	SourceUnknown  Source = iota
	SourceNginxLog        // a line of an nginx access log
	SourceSniff           // a request seen on the wire
	SourceDecision        // a request asked about through the decision API
)

var sourceNames = [...]string{"other", "nginx_log", "sniff", "decision"}

func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "other"
}

// Field is a name and its value: a header (name lower-cased), a cookie or a
// log variable.
type Field struct {
	Name, Value string
}

// TLS holds the fingerprints of the connection that carried a request. JA3
// and JA3N hold the MD5 hashes (what nginx modules log as $ssl_ja3_hash and
// what the sniffer joins), JA4 the JA4 string.
type TLS struct {
	SNI, ALPN, JA3, JA3N, JA4 string
}

// Event is one request as seen at the edge. The zero value is an empty event;
// Reset returns an event to it while keeping the capacity of its slices.
type Event struct {
	Time   time.Time
	Source Source

	IP      netip.Addr   // ip.src: the client, after trusted-proxy handling
	Port    uint16       // client port (nginx $remote_port), used to join fingerprints
	Prefix  netip.Prefix // ip.src.prefix, set by the Enricher
	ASN     uint32       // ip.src.asnum, 0 when unknown
	Country string       // ip.src.country, ISO 3166 alpha-2, "" when unknown

	Host, Method, Path, Query, Protocol string
	Status                              int
	UserAgent, Referer                  string
	BytesSent                           int64
	RequestTime                         float64 // seconds

	Headers []Field // request headers, names lower-cased with '-'
	Cookies []Field
	Vars    []Field // other source values by name, e.g. nginx "upstream_response_time"

	TLS  TLS
	JA4H string

	// Bot is what the user agent claims about a crawler, and whether the
	// address is in that crawler's published ranges (set by the Enricher).
	Bot Bot

	// SyslogHost is syslog.host: the host that sent the line over syslog
	// (the HOSTNAME of its header), "" for other sources.
	SyslogHost string

	// Session is session.*: what the client's requests so far say of its
	// habits (characteristics/session fills it on the log path).
	Session Session

	// stacks names the client software of a JA4 (tls.client); set by the
	// Enricher and read lazily, since fingerprints are joined after it.
	stacks *bots.Stacks

	nrm normalized // normalised request fields, computed on first use
}

// Bot is what an event says about a known crawler: bot.name and bot.verified.
type Bot struct {
	Name     string // the crawler its user agent names, "" when none
	Verified bool   // the address is in that crawler's published ranges, or its reverse DNS confirms it
	// Pending: the name cannot be judged yet, its reverse DNS lookup not
	// answered, or no resolver to ask for a crawler known by reverse DNS.
	Pending bool
}

// TLSClient returns tls.client, "<kind>/<name>" of the TLS stack that made
// the connection's ClientHello (such as "library/curl"), when the event has a
// JA4 the Enricher's table knows.
func (e *Event) TLSClient() (string, bool) {
	if e.TLS.JA4 == "" {
		return "", false
	}
	return e.stacks.Client(e.TLS.JA4)
}

// Reset clears e for reuse, keeping the backing arrays of its slices.
//
// It runs once per log line: the fields are cleared one by one, which costs
// a third of building a whole Event and copying it over e, and
// TestResetClearsEveryField holds it to clearing every field there is.
func (e *Event) Reset() {
	e.Time = time.Time{}
	e.Source = SourceUnknown
	e.IP, e.Port, e.Prefix, e.ASN, e.Country = netip.Addr{}, 0, netip.Prefix{}, 0, ""
	e.Host, e.Method, e.Path, e.Query, e.Protocol = "", "", "", "", ""
	e.Status = 0
	e.UserAgent, e.Referer = "", ""
	e.BytesSent, e.RequestTime = 0, 0
	e.Headers, e.Cookies, e.Vars = e.Headers[:0], e.Cookies[:0], e.Vars[:0]
	e.TLS = TLS{}
	e.JA4H = ""
	e.Bot = Bot{}
	e.SyslogHost = ""
	e.Session = Session{}
	e.stacks = nil
	e.nrm.reset()
}

// Header returns the value of the first header with the given lower-case name.
func (e *Event) Header(name string) (string, bool) { return lookup(e.Headers, name) }

// Cookie returns the value of the first cookie with the given name.
func (e *Event) Cookie(name string) (string, bool) { return lookup(e.Cookies, name) }

// Var returns the value of the source variable with the given name.
func (e *Event) Var(name string) (string, bool) { return lookup(e.Vars, name) }

func lookup(fs []Field, name string) (string, bool) {
	for i := range fs {
		if fs[i].Name == name {
			return fs[i].Value, true
		}
	}
	return "", false
}

// Clone returns a deep copy of e that owns all its strings.
func (e *Event) Clone() Event {
	c := *e
	c.Country = strings.Clone(e.Country)
	c.Host = strings.Clone(e.Host)
	c.Method = strings.Clone(e.Method)
	c.Path = strings.Clone(e.Path)
	c.Query = strings.Clone(e.Query)
	c.Protocol = strings.Clone(e.Protocol)
	c.UserAgent = strings.Clone(e.UserAgent)
	c.Referer = strings.Clone(e.Referer)
	c.Headers = cloneFields(e.Headers)
	c.Cookies = cloneFields(e.Cookies)
	c.Vars = cloneFields(e.Vars)
	c.TLS = TLS{
		SNI: strings.Clone(e.TLS.SNI), ALPN: strings.Clone(e.TLS.ALPN),
		JA3: strings.Clone(e.TLS.JA3), JA3N: strings.Clone(e.TLS.JA3N), JA4: strings.Clone(e.TLS.JA4),
	}
	c.JA4H = strings.Clone(e.JA4H)
	c.nrm = normalized{}
	c.Bot.Name = strings.Clone(e.Bot.Name)
	c.SyslogHost = strings.Clone(e.SyslogHost)
	return c
}

func cloneFields(fs []Field) []Field {
	if fs == nil {
		return nil
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field{strings.Clone(f.Name), strings.Clone(f.Value)}
	}
	return out
}

// SetHeader appends a header, lower-casing its name.
func (e *Event) SetHeader(name, value string) {
	e.Headers = append(e.Headers, Field{Name: lowerASCII(name), Value: value})
}

// lowerASCII lower-cases s, allocating only when s has an upper-case letter.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

package characteristics

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Kind is the type of a characteristic's value.
type Kind uint8

// Kinds of characteristic values.
const (
	KindString Kind = iota
	KindAddr        // ip.src: a netip.Addr
	KindPrefix      // ip.src.prefix: a netip.Prefix
	KindNumber      // http.status, ip.src.asnum, time ...
)

type fieldID uint8

const (
	fIP fieldID = iota
	fPrefix
	fASN
	fCountry
	fPort
	fHost
	fMethod
	fPath
	fQuery
	fProtocol
	fStatus
	fUserAgent
	fReferer
	fBytesSent
	fRequestTime
	fHeader
	fCookie
	fVar
	fSNI
	fALPN
	fJA3
	fJA3N
	fJA4
	fJA4H
	fTime
	fSource
	fNormPath
	fNormQuery
	fNormUA
	fNormReferer
	fArg
	fAnomaly
	fBotName
	fBotVerified
	fTLSClient
	fSyslogHost
	fBotPending
	fSessRequests
	fSessPages
	fSessNoAssets
	fSessProto
	fSessPostNoGet
	fSessRefNever
	fSessCookieNever
)

// field describes one fixed characteristic: its canonical name, its path in the
// Rego input document and its kind.
type field struct {
	name string
	path []string
	kind Kind
}

var fields = [...]field{
	fIP:          {"ip.src", []string{"ip", "src"}, KindAddr},
	fPrefix:      {"ip.src.prefix", []string{"ip", "prefix"}, KindPrefix},
	fASN:         {"ip.src.asnum", []string{"ip", "asnum"}, KindNumber},
	fCountry:     {"ip.src.country", []string{"ip", "country"}, KindString},
	fPort:        {"ip.src.port", []string{"ip", "port"}, KindNumber},
	fHost:        {"http.host", []string{"http", "host"}, KindString},
	fMethod:      {"http.method", []string{"http", "method"}, KindString},
	fPath:        {"http.path", []string{"http", "path"}, KindString},
	fQuery:       {"http.query", []string{"http", "query"}, KindString},
	fProtocol:    {"http.protocol", []string{"http", "protocol"}, KindString},
	fStatus:      {"http.status", []string{"http", "status"}, KindNumber},
	fUserAgent:   {"http.user_agent", []string{"http", "user_agent"}, KindString},
	fReferer:     {"http.referer", []string{"http", "referer"}, KindString},
	fBytesSent:   {"http.bytes_sent", []string{"http", "bytes_sent"}, KindNumber},
	fRequestTime: {"http.request_time", []string{"http", "request_time"}, KindNumber},
	fHeader:      {"http.headers", []string{"http", "headers"}, KindString},
	fCookie:      {"http.cookies", []string{"http", "cookies"}, KindString},
	fVar:         {"log", []string{"log"}, KindString},
	fSNI:         {"tls.sni", []string{"tls", "sni"}, KindString},
	fALPN:        {"tls.alpn", []string{"tls", "alpn"}, KindString},
	fJA3:         {"tls.ja3", []string{"tls", "ja3"}, KindString},
	fJA3N:        {"tls.ja3n", []string{"tls", "ja3n"}, KindString},
	fJA4:         {"tls.ja4", []string{"tls", "ja4"}, KindString},
	fJA4H:        {"http.ja4h", []string{"http", "ja4h"}, KindString},
	fTime:        {"time", []string{"time"}, KindNumber},
	fSource:      {"source", []string{"source"}, KindString},
	fNormPath:    {"http.norm.path", []string{"http", "norm", "path"}, KindString},
	fNormQuery:   {"http.norm.query", []string{"http", "norm", "query"}, KindString},
	fNormUA:      {"http.norm.user_agent", []string{"http", "norm", "user_agent"}, KindString},
	fNormReferer: {"http.norm.referer", []string{"http", "norm", "referer"}, KindString},
	fArg:         {"http.args", []string{"http", "args"}, KindString},
	fAnomaly:     {"http.anomalies", []string{"http", "anomalies"}, KindString},
	fBotName:     {"bot.name", []string{"bot", "name"}, KindString},
	fBotVerified: {"bot.verified", []string{"bot", "verified"}, KindString},
	fTLSClient:   {"tls.client", []string{"tls", "client"}, KindString},
	fSyslogHost:  {"syslog.host", []string{"syslog", "host"}, KindString},
	fBotPending:  {"bot.pending", []string{"bot", "pending"}, KindString},

	fSessRequests:    {"session.requests", []string{"session", "requests"}, KindNumber},
	fSessPages:       {"session.pages", []string{"session", "pages"}, KindNumber},
	fSessNoAssets:    {"session.pages_without_assets", []string{"session", "pages_without_assets"}, KindNumber},
	fSessProto:       {"session.proto_changed", []string{"session", "proto_changed"}, KindString},
	fSessPostNoGet:   {"session.post_without_get", []string{"session", "post_without_get"}, KindNumber},
	fSessRefNever:    {"session.referer_never", []string{"session", "referer_never"}, KindString},
	fSessCookieNever: {"session.cookie_never", []string{"session", "cookie_never"}, KindString},
}

// byName maps every accepted spelling of a fixed characteristic to its field.
var byName = func() map[string]fieldID {
	m := make(map[string]fieldID, 2*len(fields))
	for id, f := range fields {
		if keyed(fieldID(id)) {
			continue
		}
		m[f.name] = fieldID(id)
		m[strings.Join(f.path, ".")] = fieldID(id) // the Rego spelling, e.g. ip.asnum
	}
	return m
}()

// keyed reports whether a field is a family named by a key: a header, a
// cookie, a log variable, a query argument or an anomaly.
func keyed(id fieldID) bool {
	switch id {
	case fHeader, fCookie, fVar, fArg, fAnomaly:
		return true
	}
	return false
}

// Names lists the canonical names of the fixed characteristics, for error messages.
func Names() []string {
	out := make([]string, 0, len(fields)+3)
	for id, f := range fields {
		switch fieldID(id) {
		case fHeader:
			out = append(out, `http.headers["name"]`)
		case fCookie:
			out = append(out, `http.cookies["name"]`)
		case fVar:
			out = append(out, "log.<nginx variable>")
		case fArg:
			out = append(out, `http.args["name"]`)
		case fAnomaly:
			out = append(out, `http.anomalies["`+strings.Join(anomalyNames[:], `|`)+`"]`)
		default:
			out = append(out, f.name)
		}
	}
	return out
}

// Characteristic is a parsed characteristic name. The zero value is not valid;
// use Parse.
type Characteristic struct {
	id  fieldID
	arg string  // header, cookie, variable, argument or anomaly name
	an  Anomaly // the anomaly of an http.anomalies characteristic
}

// Parse reads a characteristic name: one of Names, http.headers["name"],
// http.cookies["name"] (also with a dot: http.headers.name) or log.<variable>.
// Header names are lower-cased.
func Parse(name string) (Characteristic, error) {
	if id, ok := byName[name]; ok {
		return Characteristic{id: id}, nil
	}
	for _, p := range []struct {
		prefix string
		id     fieldID
	}{{"http.headers", fHeader}, {"http.cookies", fCookie}, {"http.args", fArg}, {"http.anomalies", fAnomaly}, {"log", fVar}} {
		rest, ok := strings.CutPrefix(name, p.prefix)
		if !ok {
			continue
		}
		arg, ok := subscript(rest)
		if !ok || arg == "" {
			return Characteristic{}, fmt.Errorf("characteristic %q: want %s[\"name\"]", name, p.prefix)
		}
		if p.id == fHeader {
			arg = strings.ToLower(strings.ReplaceAll(arg, "_", "-"))
		}
		if p.id == fAnomaly {
			an := anomalyByName(arg)
			if an == 0 {
				return Characteristic{}, fmt.Errorf("characteristic %q: unknown anomaly %q; accepted: %s", name, arg, strings.Join(anomalyNames[:], ", "))
			}
			return Characteristic{id: p.id, arg: arg, an: an}, nil
		}
		return Characteristic{id: p.id, arg: arg}, nil
	}
	return Characteristic{}, fmt.Errorf("unknown characteristic %q; accepted: %s", name, strings.Join(Names(), ", "))
}

// subscript reads `["x"]` or `.x` into x.
func subscript(s string) (string, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		in := s[1 : len(s)-1]
		if u, err := strconv.Unquote(in); err == nil {
			return u, true
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(s, "."); ok && !strings.ContainsAny(rest, `.[]"`) {
		return rest, true
	}
	return "", false
}

// MustParse is Parse for names known to be valid; it panics on error and is
// meant for package-level variables and tests.
func MustParse(name string) Characteristic {
	c, err := Parse(name)
	if err != nil {
		panic(err)
	}
	return c
}

// String returns the canonical name, as used in scopes and output.
func (c Characteristic) String() string {
	switch c.id {
	case fHeader, fCookie, fArg, fAnomaly:
		return fields[c.id].name + `["` + c.arg + `"]`
	case fVar:
		return "log." + c.arg
	}
	return fields[c.id].name
}

// KnownAtRequest reports whether the characteristic is known when the request
// arrives, before it is served: true for the client's address and what its
// request line, headers and cookies say; false for the response (status,
// bytes, timing), log-only variables, the protocol string, the sniffed
// fingerprints (joined onto log lines, not onto decision requests) and the
// source, which differs between the two.
func (c Characteristic) KnownAtRequest() bool {
	switch c.id {
	case fIP, fPrefix, fASN, fCountry, fPort, fHost, fMethod, fPath, fQuery,
		fUserAgent, fReferer, fHeader, fCookie, fTime, fBotName, fBotVerified, fBotPending,
		fNormPath, fNormQuery, fNormUA, fNormReferer, fArg, fAnomaly:
		return true
	}
	return false
}

// Kind returns the type of the characteristic's value.
func (c Characteristic) Kind() Kind { return fields[c.id].kind }

// Path returns the path of the value in the Rego input document, without "input".
func (c Characteristic) Path() []string {
	p := fields[c.id].path
	if keyed(c.id) {
		return append(p[:len(p):len(p)], c.arg)
	}
	return p
}

// Addr returns ip.src for KindAddr characteristics, and the zero Addr otherwise.
func (c Characteristic) Addr(e *Event) netip.Addr {
	if c.id == fIP {
		return e.IP
	}
	return netip.Addr{}
}

// Str returns the value of a KindString characteristic and whether the event
// has it. A header, cookie or variable that is absent reports false.
func (c Characteristic) Str(e *Event) (string, bool) {
	var s string
	switch c.id {
	case fCountry:
		s = e.Country
	case fHost:
		s = e.Host
	case fMethod:
		s = e.Method
	case fPath:
		s = e.Path
	case fQuery:
		s = e.Query
	case fProtocol:
		s = e.Protocol
	case fUserAgent:
		s = e.UserAgent
	case fReferer:
		s = e.Referer
	case fHeader:
		return e.Header(c.arg)
	case fCookie:
		return e.Cookie(c.arg)
	case fVar:
		return e.Var(c.arg)
	case fSNI:
		s = e.TLS.SNI
	case fALPN:
		s = e.TLS.ALPN
	case fJA3:
		s = e.TLS.JA3
	case fJA3N:
		s = e.TLS.JA3N
	case fJA4:
		s = e.TLS.JA4
	case fJA4H:
		s = e.JA4H
	case fSource:
		return e.Source.String(), true
	case fNormPath:
		s = e.NormPath()
	case fNormQuery:
		s = e.NormQuery()
	case fNormUA:
		s = e.NormUserAgent()
	case fNormReferer:
		s = e.NormReferer()
	case fArg:
		return e.Arg(c.arg)
	case fAnomaly:
		if e.Anomalies().Has(c.an) {
			return "true", true
		}
		return "", false
	case fBotName:
		s = e.Bot.Name
	case fBotVerified:
		if e.Bot.Verified {
			return "true", true
		}
		return "", false
	case fBotPending:
		if e.Bot.Pending {
			return "true", true
		}
		return "", false
	case fSessProto:
		return e.Session.flag(SessionProtoChanged)
	case fSessRefNever:
		return e.Session.flag(SessionRefererNever)
	case fSessCookieNever:
		return e.Session.flag(SessionCookieNever)
	case fTLSClient:
		return e.TLSClient()
	case fSyslogHost:
		s = e.SyslogHost
	default:
		return "", false
	}
	return s, s != ""
}

// Num returns the value of a KindNumber characteristic and whether the event
// has it. A log variable that parses as a number is also accepted, so a score
// can be read from, say, log.upstream_response_time.
func (c Characteristic) Num(e *Event) (float64, bool) {
	switch c.id {
	case fASN:
		return float64(e.ASN), e.ASN != 0
	case fPort:
		return float64(e.Port), e.Port != 0
	case fStatus:
		return float64(e.Status), e.Status != 0
	case fBytesSent:
		return float64(e.BytesSent), true
	case fRequestTime:
		return e.RequestTime, true
	case fTime:
		if e.Time.IsZero() {
			return 0, false
		}
		return float64(e.Time.UnixNano()) / 1e9, true
	case fSessRequests:
		return float64(e.Session.Requests), e.Session.Known
	case fSessPages:
		return float64(e.Session.Pages), e.Session.Known
	case fSessNoAssets:
		return float64(e.Session.PagesWithoutAssets), e.Session.Known
	case fSessPostNoGet:
		return float64(e.Session.PostsWithoutGet), e.Session.Known
	case fVar, fHeader, fCookie, fArg:
		s, ok := c.Str(e)
		if !ok {
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return 0, false
}

// Present reports whether the event has a value for c.
func (c Characteristic) Present(e *Event) bool {
	switch c.Kind() {
	case KindAddr:
		return e.IP.IsValid()
	case KindPrefix:
		return e.Prefix.IsValid()
	case KindNumber:
		_, ok := c.Num(e)
		return ok
	}
	_, ok := c.Str(e)
	return ok
}

// AppendValue appends the text form of c's value in e to dst, without
// allocating beyond dst's growth. Absent values append nothing.
func (c Characteristic) AppendValue(dst []byte, e *Event) []byte {
	switch c.Kind() {
	case KindAddr:
		if e.IP.IsValid() {
			return e.IP.AppendTo(dst)
		}
		return dst
	case KindPrefix:
		if e.Prefix.IsValid() {
			return e.Prefix.AppendTo(dst)
		}
		return dst
	case KindNumber:
		switch c.id {
		case fVar, fHeader, fCookie, fArg:
		default:
			f, ok := c.Num(e)
			if !ok {
				return dst
			}
			return strconv.AppendFloat(dst, f, 'f', -1, 64)
		}
	}
	s, _ := c.Str(e)
	return append(dst, s...)
}

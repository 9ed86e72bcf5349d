package characteristics

import "strings"

// Info describes one characteristic, for `guardd help characteristics`: the
// table is built from the package's own list, so it names every
// characteristic Parse accepts and no other.
type Info struct {
	Name  string // as rule metadata names it: "ip.src", `http.headers["name"]`
	Input string // its path in the Rego input document: "input.ip.prefix"
	Kind  string // "address", "prefix", "number", "string" or "true"
	Doc   string // one line
}

// fieldDocs is one line per field; TestDescribe checks none is missing.
var fieldDocs = [len(fields)]string{
	fIP:          "client address after trusted-proxy handling of X-Forwarded-For",
	fPrefix:      "client network (default /24 for IPv4, /64 for IPv6; characteristics.prefix_v4, prefix_v6)",
	fASN:         "origin AS number, from characteristics.asn_database; absent when unknown",
	fCountry:     "ISO 3166 alpha-2 country, from characteristics.country_database; absent when unknown",
	fPort:        "client port (nginx's $remote_port, or the capture)",
	fHost:        "Host header or nginx's $host",
	fMethod:      `as sent: "GET", "POST"`,
	fPath:        "request path without the query string, not lower-cased",
	fQuery:       "query string without ?",
	fProtocol:    `"HTTP/1.1", "HTTP/2.0"`,
	fStatus:      "response status; absent when not known yet (decision API)",
	fUserAgent:   "User-Agent header",
	fReferer:     "Referer header",
	fBytesSent:   "response bytes; always present",
	fRequestTime: "request time in seconds; always present",
	fHeader:      "any request header, lower-case name with -",
	fCookie:      "any cookie",
	fVar:         `any other variable of the log format, as a string (compare with "502", not 502)`,
	fSNI:         "TLS server name, from sniffing or joined onto log lines",
	fALPN:        "TLS ALPN offered",
	fJA3:         "JA3 of the TLS ClientHello",
	fJA3N:        "JA3 with sorted extensions",
	fJA4:         "JA4 of the TLS ClientHello",
	fJA4H:        "JA4H of the HTTP request",
	fTime:        "event time, seconds since the epoch (from the log line or packet, never the wall clock in replay)",
	fSource:      `which ingester produced the event: "nginx_log", "sniff", "decision" or "other"`,
	fNormPath:    "the path percent-decoded, overlong UTF-8 and \\ read plainly, ;params dropped, . and .. resolved",
	fNormQuery:   "the query percent-decoded, + as a space",
	fNormUA:      "User-Agent percent-decoded",
	fNormReferer: "Referer percent-decoded",
	fArg:         `the first query argument of that name, decoded; "" for ?flag`,
	fAnomaly:     "present when normalising the path found it: " + strings.Join(anomalyNames[:], ", "),
	fBotName:     "the crawler the user agent names (googlebot, bingbot, ...); absent for other clients",
	fBotVerified: "present when the address is in that crawler's published ranges, or its reverse DNS is forward-confirmed (characteristics.resolver)",
	fBotPending:  "\"true\" while the crawler's name awaits its reverse DNS check: not yet verified, not yet punished",
	fSyslogHost:  "the host that sent the line over syslog (its header's HOSTNAME); absent for files, standard input and the decision API",
	fTLSClient:   `"<kind>/<name>" of the TLS stack whose JA4 this is (library/curl, browser/chromium, ...), when known`,

	fSessRequests:    "requests of the client's session so far, this one included (a session: one client address, until 30m idle); log lines of a format with cookies only",
	fSessPages:       "page views (GET or HEAD of a document, not an API's) of the session so far, this one included",
	fSessNoAssets:    "distinct pages (paths without the query) the session viewed while it had fetched no asset (style, script, image, font); 0 once one came",
	fSessProto:       `"true" when the session spoke HTTP/1.0 and a later version`,
	fSessPostNoGet:   "POSTs of the session before it made any GET or HEAD",
	fSessRefNever:    `"true" while no request of the session has sent a Referer`,
	fSessCookieNever: `"true" while no request of the session has sent a cookie; absent when the log format carries no cookie`,
}

// Describe lists every characteristic in the order of Names.
func Describe() []Info {
	names := Names()
	out := make([]Info, len(fields))
	for id, f := range fields {
		in := Info{Name: names[id], Input: "input." + strings.Join(f.path, "."), Doc: fieldDocs[id]}
		switch f.kind {
		case KindAddr:
			in.Kind = "address"
		case KindPrefix:
			in.Kind = "prefix"
		case KindNumber:
			in.Kind = "number"
		default:
			in.Kind = "string"
		}
		switch fieldID(id) {
		case fHeader, fCookie, fArg:
			in.Input += `["name"]`
		case fVar:
			in.Input += `["name"]`
			in.Name = "log.name"
		case fAnomaly:
			in.Input += `["name"]`
			in.Name, in.Kind = `http.anomalies["name"]`, "true"
		case fBotVerified, fBotPending, fSessProto, fSessRefNever, fSessCookieNever:
			in.Kind = "true"
		}
		out[id] = in
	}
	return out
}

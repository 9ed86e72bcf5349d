package characteristics

import "strings"

// Input returns the Rego input document of e: the characteristics of Names at
// their Path. Absent values are left out, so `input.tls.ja4` is undefined on a
// log line that was never joined to a handshake. It allocates, and is meant for
// full Rego evaluation and rule tests, not for the hot path.
func (e *Event) Input() map[string]any {
	ip := map[string]any{}
	if e.IP.IsValid() {
		ip["src"] = e.IP.String()
	}
	if e.Prefix.IsValid() {
		ip["prefix"] = e.Prefix.String()
	}
	if e.ASN != 0 {
		ip["asnum"] = int64(e.ASN)
	}
	if e.Country != "" {
		ip["country"] = e.Country
	}
	if e.Port != 0 {
		ip["port"] = int64(e.Port)
	}
	http := map[string]any{
		"headers":      fieldMap(e.Headers),
		"cookies":      fieldMap(e.Cookies),
		"bytes_sent":   e.BytesSent,
		"request_time": e.RequestTime,
	}
	putStr(http, "host", e.Host)
	putStr(http, "method", e.Method)
	putStr(http, "path", e.Path)
	putStr(http, "query", e.Query)
	putStr(http, "protocol", e.Protocol)
	putStr(http, "user_agent", e.UserAgent)
	putStr(http, "referer", e.Referer)
	putStr(http, "ja4h", e.JA4H)
	if e.Status != 0 {
		http["status"] = int64(e.Status)
	}
	norm := map[string]any{}
	putStr(norm, "path", e.NormPath())
	putStr(norm, "query", e.NormQuery())
	putStr(norm, "user_agent", e.NormUserAgent())
	putStr(norm, "referer", e.NormReferer())
	http["norm"] = norm
	args := map[string]any{}
	for q := e.Query; q != ""; {
		part := q
		if i := strings.IndexByte(q, '&'); i >= 0 {
			part, q = q[:i], q[i+1:]
		} else {
			q = ""
		}
		k, _, _ := strings.Cut(part, "=")
		if k == "" {
			continue
		}
		name := string(appendDecoded(nil, k, true, nil))
		if _, dup := args[name]; !dup {
			v, _ := e.Arg(name)
			args[name] = strings.Clone(v)
		}
	}
	http["args"] = args
	anomalies := map[string]any{}
	an := e.Anomalies()
	for i, n := range anomalyNames {
		if an&(1<<i) != 0 {
			anomalies[n] = true
		}
	}
	http["anomalies"] = anomalies
	tls := map[string]any{}
	putStr(tls, "sni", e.TLS.SNI)
	putStr(tls, "alpn", e.TLS.ALPN)
	putStr(tls, "ja3", e.TLS.JA3)
	putStr(tls, "ja3n", e.TLS.JA3N)
	putStr(tls, "ja4", e.TLS.JA4)
	if c, ok := e.TLSClient(); ok {
		tls["client"] = c
	}
	bot := map[string]any{}
	putStr(bot, "name", e.Bot.Name)
	if e.Bot.Verified {
		bot["verified"] = true
	}
	if e.Bot.Pending {
		bot["pending"] = true
	}
	doc := map[string]any{
		"ip":     ip,
		"http":   http,
		"tls":    tls,
		"bot":    bot,
		"log":    fieldMap(e.Vars),
		"source": e.Source.String(),
	}
	if m := e.Session.input(); m != nil {
		doc["session"] = m
	}
	if e.SyslogHost != "" {
		doc["syslog"] = map[string]any{"host": e.SyslogHost}
	}
	if !e.Time.IsZero() {
		doc["time"] = float64(e.Time.UnixNano()) / 1e9
	}
	return doc
}

func putStr(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func fieldMap(fs []Field) map[string]any {
	m := make(map[string]any, len(fs))
	for _, f := range fs {
		if _, dup := m[f.Name]; !dup {
			m[f.Name] = f.Value
		}
	}
	return m
}

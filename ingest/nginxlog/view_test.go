package nginxlog

import (
	"encoding/json"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// view is an Event as tests compare it and golden files print it.
type view struct {
	Line        int      `json:"line,omitempty"`
	Time        string   `json:"time,omitempty"`
	IP          string   `json:"ip,omitempty"`
	Port        uint16   `json:"port,omitempty"`
	Host        string   `json:"host,omitempty"`
	Method      string   `json:"method,omitempty"`
	Path        string   `json:"path,omitempty"`
	Query       string   `json:"query,omitempty"`
	Protocol    string   `json:"protocol,omitempty"`
	Status      int      `json:"status,omitempty"`
	BytesSent   int64    `json:"bytes_sent,omitempty"`
	RequestTime float64  `json:"request_time,omitempty"`
	Referer     string   `json:"referer,omitempty"`
	UserAgent   string   `json:"user_agent,omitempty"`
	Headers     []string `json:"headers,omitempty"`
	Cookies     []string `json:"cookies,omitempty"`
	Vars        []string `json:"vars,omitempty"`
	SNI         string   `json:"sni,omitempty"`
	ALPN        string   `json:"alpn,omitempty"`
	JA3         string   `json:"ja3,omitempty"`
	JA4         string   `json:"ja4,omitempty"`
	Error       string   `json:"error,omitempty"`
}

func viewOf(e *characteristics.Event) view {
	v := view{
		Port: e.Port, Host: e.Host, Method: e.Method, Path: e.Path, Query: e.Query,
		Protocol: e.Protocol, Status: e.Status, BytesSent: e.BytesSent, RequestTime: e.RequestTime,
		Referer: e.Referer, UserAgent: e.UserAgent,
		SNI: e.TLS.SNI, ALPN: e.TLS.ALPN, JA3: e.TLS.JA3, JA4: e.TLS.JA4,
	}
	if !e.Time.IsZero() {
		v.Time = e.Time.Format(time.RFC3339Nano)
	}
	if e.IP.IsValid() {
		v.IP = e.IP.String()
	}
	for _, f := range e.Headers {
		v.Headers = append(v.Headers, f.Name+": "+f.Value)
	}
	for _, f := range e.Cookies {
		v.Cookies = append(v.Cookies, f.Name+"="+f.Value)
	}
	for _, f := range e.Vars {
		v.Vars = append(v.Vars, f.Name+"="+f.Value)
	}
	return v
}

func (v view) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

package characteristics_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/mmdbtest"
)

func sampleEvent() *characteristics.Event {
	return &characteristics.Event{
		Time:       time.Unix(1700000000, 500_000_000),
		Source:     characteristics.SourceNginxLog,
		IP:         netip.MustParseAddr("203.0.113.7"),
		Port:       51234,
		Prefix:     netip.MustParsePrefix("203.0.113.0/24"),
		ASN:        64500,
		Country:    "NL",
		Host:       "shop.example",
		Method:     "POST",
		Path:       "/login",
		Query:      "next=/",
		Status:     401,
		UserAgent:  "curl/8.0",
		Headers:    []characteristics.Field{{Name: "x-api-key", Value: "k1"}, {Name: "x-cost", Value: "2.5"}},
		Cookies:    []characteristics.Field{{Name: "session", Value: "abc"}},
		Vars:       []characteristics.Field{{Name: "upstream_response_time", Value: "0.250"}},
		TLS:        characteristics.TLS{JA4: "t13d1516h2_8daaf6152771_e5627efa2ab1"},
		SyslogHost: "edge-2",
	}
}

func TestParseAndRead(t *testing.T) {
	e := sampleEvent()
	tests := []struct {
		name, canon, value string
		path               string
		present            bool
	}{
		{"ip.src", "ip.src", "203.0.113.7", "ip.src", true},
		{"ip.src.prefix", "ip.src.prefix", "203.0.113.0/24", "ip.prefix", true},
		{"ip.prefix", "ip.src.prefix", "203.0.113.0/24", "ip.prefix", true},
		{"ip.src.asnum", "ip.src.asnum", "64500", "ip.asnum", true},
		{"ip.src.country", "ip.src.country", "NL", "ip.country", true},
		{"http.method", "http.method", "POST", "http.method", true},
		{"http.status", "http.status", "401", "http.status", true},
		{`http.headers["X-Api-Key"]`, `http.headers["x-api-key"]`, "k1", "http.headers.x-api-key", true},
		{"http.headers.x_api_key", `http.headers["x-api-key"]`, "k1", "http.headers.x-api-key", true},
		{`http.cookies["session"]`, `http.cookies["session"]`, "abc", "http.cookies.session", true},
		{`http.cookies["other"]`, `http.cookies["other"]`, "", "http.cookies.other", false},
		{"log.upstream_response_time", "log.upstream_response_time", "0.250", "log.upstream_response_time", true},
		{"tls.ja4", "tls.ja4", "t13d1516h2_8daaf6152771_e5627efa2ab1", "tls.ja4", true},
		{"tls.ja3", "tls.ja3", "", "tls.ja3", false},
		{"http.ja4h", "http.ja4h", "", "http.ja4h", false},
		{"source", "source", "nginx_log", "source", true},
		{"syslog.host", "syslog.host", "edge-2", "syslog.host", true},
		{"time", "time", "1700000000.5", "time", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := characteristics.Parse(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.String(); got != tt.canon {
				t.Errorf("String() = %q, want %q", got, tt.canon)
			}
			if got := string(c.AppendValue(nil, e)); got != tt.value {
				t.Errorf("AppendValue = %q, want %q", got, tt.value)
			}
			if got := strings.Join(c.Path(), "."); got != tt.path {
				t.Errorf("Path = %q, want %q", got, tt.path)
			}
			if got := c.Present(e); got != tt.present {
				t.Errorf("Present = %v, want %v", got, tt.present)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, name := range []string{"", "ip", "ip.dst", "http.headers", `http.headers[""]`, `http.headers[x]`, "http.cookies.", "tls.ja5"} {
		if _, err := characteristics.Parse(name); err == nil {
			t.Errorf("Parse(%q) succeeded, want error", name)
		}
	}
	_, err := characteristics.Parse("ip.dst")
	if err == nil || !strings.Contains(err.Error(), "ip.src.prefix") {
		t.Errorf("error should list accepted names, got %v", err)
	}
}

func TestNumFromVar(t *testing.T) {
	e := sampleEvent()
	for name, want := range map[string]float64{"log.upstream_response_time": 0.25, `http.headers["x-cost"]`: 2.5, "http.status": 401} {
		v, ok := characteristics.MustParse(name).Num(e)
		if !ok || v != want {
			t.Errorf("%s: Num = %v, %v; want %v", name, v, ok, want)
		}
	}
	if _, ok := characteristics.MustParse("http.headers.x-api-key").Num(e); ok {
		t.Error("non-numeric header reported a number")
	}
}

func TestAppendValueAllocs(t *testing.T) {
	e := sampleEvent()
	cs := []characteristics.Characteristic{
		characteristics.MustParse("ip.src"), characteristics.MustParse("ip.src.prefix"),
		characteristics.MustParse("http.cookies.session"), characteristics.MustParse("ip.src.asnum"),
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		buf = buf[:0]
		for _, c := range cs {
			buf = c.AppendValue(buf, e)
			buf = append(buf, 0)
		}
	}); n != 0 {
		t.Errorf("AppendValue allocates %v times", n)
	}
}

func TestInputDocument(t *testing.T) {
	doc := sampleEvent().Input()
	ip := doc["ip"].(map[string]any)
	if ip["src"] != "203.0.113.7" || ip["prefix"] != "203.0.113.0/24" || ip["asnum"] != int64(64500) {
		t.Errorf("ip = %v", ip)
	}
	http := doc["http"].(map[string]any)
	if http["status"] != int64(401) || http["cookies"].(map[string]any)["session"] != "abc" {
		t.Errorf("http = %v", http)
	}
	if _, ok := doc["tls"].(map[string]any)["ja3"]; ok {
		t.Error("absent ja3 present in input")
	}
	// Every characteristic's Path must lead to its value in the document.
	for _, name := range []string{"ip.src", "ip.src.prefix", "http.method", "tls.ja4", "http.cookies.session", "log.upstream_response_time", "syslog.host"} {
		c := characteristics.MustParse(name)
		var v any = doc
		for _, k := range c.Path() {
			v = v.(map[string]any)[k]
		}
		if v == nil {
			t.Errorf("%s: path %v not in input", name, c.Path())
		}
	}
}

func TestEnrich(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "geo.mmdb")
	if err := mmdbtest.Write(db, []mmdbtest.Network{
		{Prefix: netip.MustParsePrefix("203.0.113.0/24"), ASN: 64500, Org: "Example Hosting", Country: "NL"},
		{Prefix: netip.MustParsePrefix("2001:db8::/32"), ASN: 64501, Country: "DE"},
	}); err != nil {
		t.Fatal(err)
	}
	en, err := characteristics.NewEnricher(characteristics.EnrichConfig{
		TrustedProxies:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::ffff:192.168.0.0/112")},
		ASNDatabase:     db,
		CountryDatabase: db,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	tests := []struct {
		name, peer, xff string
		ip, prefix      string
		asn             uint32
		country         string
	}{
		{"direct v4", "203.0.113.9", "", "203.0.113.9", "203.0.113.0/24", 64500, "NL"},
		{"mapped v4", "::ffff:203.0.113.9", "", "203.0.113.9", "203.0.113.0/24", 64500, "NL"},
		{"v6", "2001:db8:1:2:3::4", "", "2001:db8:1:2:3::4", "2001:db8:1:2::/64", 64501, "DE"},
		{"untrusted xff ignored", "198.51.100.1", "203.0.113.9", "198.51.100.1", "198.51.100.0/24", 0, ""},
		{"trusted proxy", "10.1.2.3", "203.0.113.9", "203.0.113.9", "203.0.113.0/24", 64500, "NL"},
		{"proxy chain", "10.1.2.3", "198.51.100.5, 203.0.113.9, 10.9.9.9", "203.0.113.9", "203.0.113.0/24", 64500, "NL"},
		{"spoofed leftmost", "10.1.2.3", "1.2.3.4, 203.0.113.9", "203.0.113.9", "203.0.113.0/24", 64500, "NL"},
		{"all trusted", "10.1.2.3", "10.0.0.1", "10.0.0.1", "10.0.0.0/24", 0, ""},
		{"garbage stops walk", "10.1.2.3", "203.0.113.9, junk", "10.1.2.3", "10.1.2.0/24", 0, ""},
		{"mapped trusted proxy", "192.168.1.1", "2001:db8::1", "2001:db8::1", "2001:db8::/64", 64501, "DE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &characteristics.Event{IP: netip.MustParseAddr(tt.peer)}
			if tt.xff != "" {
				e.SetHeader("X-Forwarded-For", tt.xff)
			}
			en.Enrich(e)
			if e.IP.String() != tt.ip || e.Prefix.String() != tt.prefix || e.ASN != tt.asn || e.Country != tt.country {
				t.Errorf("got ip=%s prefix=%s asn=%d country=%q", e.IP, e.Prefix, e.ASN, e.Country)
			}
		})
	}
	e := &characteristics.Event{IP: netip.MustParseAddr("203.0.113.50")}
	en.Enrich(e)
	if n := testing.AllocsPerRun(100, func() {
		e.ASN, e.Country = 0, ""
		en.Enrich(e)
	}); n != 0 {
		t.Errorf("Enrich allocates %v times with a warm cache", n)
	}
}

func TestEnrichConfigErrors(t *testing.T) {
	for _, cfg := range []characteristics.EnrichConfig{
		{PrefixV4: 33}, {PrefixV6: 129}, {PrefixV4: -1},
		{ASNDatabase: "/nonexistent/asn.mmdb"},
	} {
		if _, err := characteristics.NewEnricher(cfg); err == nil {
			t.Errorf("NewEnricher(%+v) succeeded", cfg)
		}
	}
}

func TestClone(t *testing.T) {
	buf := []byte("POST")
	e := sampleEvent()
	e.Method = string(buf) // not aliasing, but Clone must copy slices
	c := e.Clone()
	e.Headers[0].Value = "changed"
	if c.Headers[0].Value != "k1" {
		t.Error("Clone shares header slice")
	}
	e.Reset()
	if e.Method != "" || len(e.Headers) != 0 || cap(e.Headers) == 0 {
		t.Error("Reset did not clear or dropped capacity")
	}
}

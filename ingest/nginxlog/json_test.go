package nginxlog

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
)

var jsonLineCases = []struct {
	name, line string
	want       view
	err        string
}{
	{
		name: "typical",
		line: `{"time_iso8601":"2024-05-01T12:00:00+00:00","remote_addr":"192.0.2.7","remote_port":"50000","request":"GET /x?y=1 HTTP/1.1","status":"200","body_bytes_sent":1234,"request_time":"0.005","http_referer":"","http_user_agent":"Mozilla/5.0","http_x_forwarded_for":"-","upstream_addr":"10.0.0.2:8080"}`,
		want: view{Time: "2024-05-01T12:00:00Z", IP: "192.0.2.7", Port: 50000, Method: "GET", Path: "/x", Query: "y=1",
			Protocol: "HTTP/1.1", Status: 200, BytesSent: 1234, RequestTime: 0.005, UserAgent: "Mozilla/5.0",
			Headers: []string{"user-agent: Mozilla/5.0"}, Vars: []string{"upstream_addr=10.0.0.2:8080"}},
	},
	{
		name: "dollar-keys-numbers-nesting",
		line: ` { "$remote_addr" : "::ffff:198.51.100.2", "$Status": 503, "msec": 1700000000.25, "nested": {"a": [1, {"b": "}]"}]}, "http_X_Api_Key": "k\"1", "ok": true, "n": null, "cookie_sid": "z" } `,
		want: view{Time: "2023-11-14T22:13:20.25Z", IP: "198.51.100.2", Status: 503,
			Headers: []string{`x-api-key: k"1`}, Cookies: []string{"sid=z"}, Vars: []string{"ok=true"}},
	},
	{name: "empty-object", line: `{}`, want: view{}},
	{name: "request-garbage", line: `{"request":"\u0016\u0003\u0001"}`, want: view{Vars: []string{"request=\x16\x03\x01"}}},

	{name: "not-object", line: `[1]`, err: `byte 0: want '{' starting a JSON object`},
	{name: "trailing", line: `{"status":200} x`, err: `byte 15: want end of line after the JSON object`},
	{name: "bad-status", line: `{"status":"2xx"}`, err: `$status at byte 10: want an HTTP status code, got "2xx"`},
	{name: "bad-ip", line: `{"remote_addr":"localhost"}`, err: `$remote_addr at byte 15: want an IPv4 or IPv6 address`},
	{name: "unterminated", line: `{"status":"200`, err: `want a JSON value`},
	{name: "missing-colon", line: `{"status" 200}`, err: `want ':' after a key`},
	{name: "missing-comma", line: `{"status":200 "x":1}`, err: `want ',' or '}' after a value`},
	{name: "bare-word", line: `{"status":nul}`, err: `want a JSON value`},
	{name: "deep", line: `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, err: `want a JSON value`},
	{name: "empty-key", line: `{"$":1}`, err: `want a variable name as key`},
}

// TestParseJSONErrorOwnsName checks that an error names its key after the
// line's buffer has been reused.
func TestParseJSONErrorOwnsName(t *testing.T) {
	line := []byte(`{"status":"abc"}`)
	var e characteristics.Event
	err := ParseJSON(line, &e)
	copy(line, "XXXXXXXXXXXXXXXX")
	if err == nil || !strings.Contains(err.Error(), "$status at byte 10") {
		t.Errorf("error after reuse = %v", err)
	}
}

func TestParseJSON(t *testing.T) {
	for _, tc := range jsonLineCases {
		t.Run(tc.name, func(t *testing.T) {
			var e characteristics.Event
			err := ParseJSON([]byte(tc.line), &e)
			if tc.err != "" {
				var fe *FieldError
				if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseJSON error = %v, want a *FieldError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseJSON: %v", err)
			}
			if got := viewOf(&e); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseJSON\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

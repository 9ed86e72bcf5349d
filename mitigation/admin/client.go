package admin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/guardd/guardd/mitigation/bulk"
)

// Client talks to a running daemon's admin API: guardd decisions, status
// and explain use it.
type Client struct {
	base, token, actor string
	c                  *http.Client
}

// NewClient is a client of the admin API listening on addr (host:port),
// authenticated by token; actor names who acts, for the daemon's log.
// timeout bounds each request, body included (0: none).
func NewClient(addr, token, actor string, timeout time.Duration) *Client {
	return &Client{base: "http://" + addr, token: token, actor: actor, c: &http.Client{Timeout: timeout}}
}

// Do sends a request with body to path and decodes the JSON answer into out
// (unless out is nil). An answer of 300 or more is an error carrying the
// API's error message.
func (a *Client) Do(method, path string, body io.Reader, out any) error {
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set(bulk.ActorHeader, a.actor)
	resp, err := a.c.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		return fmt.Errorf("admin API: %s: %s", resp.Status, cmp.Or(e.Error, strings.TrimSpace(string(b))))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// DoJSON is Do with body encoded as JSON.
func (a *Client) DoJSON(method, path string, body, out any) error {
	b, _ := json.Marshal(body)
	return a.Do(method, path, bytes.NewReader(b), out)
}

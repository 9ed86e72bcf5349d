package crowdsec_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/crowdsec"
)

// A bouncer is registered, a rule blocks an address, and the bouncer's
// first poll gets the ban.
func Example() {
	stateDir, _ := os.MkdirTemp("", "guardd")
	defer os.RemoveAll(stateDir)
	keyFile := filepath.Join(stateDir, crowdsec.KeyFileName)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

	store, _ := mitigation.New(mitigation.Config{}, nil, nil)
	srv, err := crowdsec.New(crowdsec.Config{KeyFile: keyFile, Now: func() time.Time { return now }}, store, nil, nil)
	if err != nil {
		panic(err)
	}
	key, _ := crowdsec.AddBouncer(keyFile, "fw-edge1", now) // guardd bouncers add fw-edge1

	store.Add(mitigation.Mitigation{
		Rule:    "login_bruteforce",
		Action:  mitigation.ActionBlock,
		Scope:   mitigation.Scope{{Name: "ip.src", Value: "203.0.113.7"}},
		Expires: now.Add(4 * time.Hour),
	}, now)

	ts := httptest.NewServer(srv) // the daemon mounts srv on its own listener
	defer ts.Close()
	req, _ := http.NewRequest("GET", ts.URL+"/v1/decisions/stream?startup=true", nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))
	// Output:
	// {"deleted":null,"new":[{"duration":"4h0m0s","id":1,"origin":"crowdsec","scenario":"login_bruteforce","scope":"Ip","type":"ban","value":"203.0.113.7"}]}
}

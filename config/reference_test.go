package config

import (
	"strings"
	"testing"
)

// TestReferenceUndeclared: a key that no reloader declares is refused by
// name, so docs/configuration.md cannot say nothing about it. (The file
// itself is compared with the daemon's reloaders in cmd/guardd's
// TestConfigReference.)
func TestReferenceUndeclared(t *testing.T) {
	all := Reloader{Name: "all", Live: []string{"log", "rules", "characteristics", "counting", "mitigation", "fingerprint", "sources",
		"decision", "admin", "shadowban", "crowdsec", "blocklist", "firewall", "shedding", "challenge", "scoring"}, Restart: []string{"fleet"}}
	got, err := Reference("..", []Reloader{all})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `fleet.node` | `string` | — | restart |", "| `shadowban` | section | — | yes |", "| `shadowban.routes[].body` | `string` | — | yes |"} {
		if !strings.Contains(got, want) {
			t.Errorf("reference lacks %q", want)
		}
	}
	all.Restart = nil
	all.Live = append(all.Live, "fleet.redis")
	_, err = Reference("..", []Reloader{all})
	if err == nil || !strings.Contains(err.Error(), "fleet.node") || strings.Contains(err.Error(), "fleet.redis") {
		t.Fatalf("err = %v, want fleet.node named as undeclared, and only it", err)
	}
}

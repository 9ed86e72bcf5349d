package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardMetricsExist checks that every metric a panel of the shipped
// Grafana dashboard queries is one the daemon registers.
func TestDashboardMetricsExist(t *testing.T) {
	b, err := os.ReadFile("../../dashboards/guardd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboards/guardd.json: %v", err)
	}
	name := regexp.MustCompile(`guardd_[a-z0-9_]+`)
	want := map[string]string{} // metric -> panel
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(m, suf); ok && strings.HasSuffix(base, "_seconds") {
						m = base
					}
				}
				want[m] = p.Title
			}
		}
	}
	if len(want) < 8 {
		t.Fatalf("only %d metrics found in the dashboard", len(want))
	}
	td := startDaemon(t, t.TempDir())
	defer td.stop(t)
	fams, err := td.d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	var names []string
	for m := range want {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		if have[m] {
			continue
		}
		// A vector with no series yet is not gathered; registering the name
		// again fails if and only if it is registered.
		probe := prometheus.NewCounter(prometheus.CounterOpts{Name: m, Help: "probe"})
		if err := td.d.reg.Register(probe); err == nil {
			td.d.reg.Unregister(probe)
			t.Errorf("panel %q queries %s, which guardd does not export", want[m], m)
		}
	}
}

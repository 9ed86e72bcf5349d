package main

import (
	"time"

	"github.com/guardd/guardd/mitigation/admin"
	"github.com/guardd/guardd/report"
)

// addRequest is the body the decisions command posts.
type addRequest = admin.AddRequest

// statusJSON is the daemon's /v1/status, what guardd status prints.
type statusJSON struct {
	Uptime      string         `json:"uptime"`
	Rules       []string       `json:"rules"`
	Mitigations int            `json:"mitigations"`
	ByAction    map[string]int `json:"mitigations_by_action"`
	CounterKeys int            `json:"counter_keys"`
	Tail        tailJSON       `json:"tail"`
	LastEvent   string         `json:"last_event"`
	Fleet       *fleetStatus   `json:"fleet,omitempty"`
}

// tailJSON is tail.Stats with the CLI's snake_case keys.
type tailJSON struct {
	Lines       int64 `json:"lines"`
	Bytes       int64 `json:"bytes"`
	CutLines    int64 `json:"cut_lines"`
	Rotations   int64 `json:"rotations"`
	Truncations int64 `json:"truncations"`
	Recovered   int64 `json:"recovered"`
	LostFiles   int64 `json:"lost_files"`
}

func (d *daemon) status() any {
	p := d.pipes.Load()
	st := statusJSON{Uptime: time.Since(d.started).Round(time.Second).String(), ByAction: map[string]int{}}
	if ts := d.tailStats.Load(); ts != nil {
		st.Tail = tailJSON{Lines: ts.Lines, Bytes: ts.Bytes, CutLines: ts.CutLines, Rotations: ts.Rotations,
			Truncations: ts.Truncations, Recovered: ts.Recovered, LostFiles: ts.LostFiles}
	}
	for _, rl := range p.Rules().Rules() {
		st.Rules = append(st.Rules, rl.Name)
	}
	active := d.store.List(time.Now())
	st.Mitigations = len(active)
	_, byAction := report.Counts(active)
	for _, c := range byAction {
		st.ByAction[c.Action] = c.N
	}
	st.CounterKeys, _ = p.Engine().Keys()
	st.Fleet = d.fleet.status(p.Rules().Rules())
	if t := d.lastEvent.Load(); t != 0 {
		st.LastEvent = time.Unix(0, t).UTC().Format(time.RFC3339Nano)
	}
	return st
}

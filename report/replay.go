package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// MaxKeys bounds the keys a Recorder remembers per rule.
const MaxKeys = 20_000

// Recorder gathers, during a replay, what the report draws. Its Count goes
// to engine.SetOnCount; it is not safe for concurrent use (the engine calls
// it from one goroutine).
type Recorder struct {
	rules []*rules.Rule
	per   []ruleRec
}

type ruleRec struct {
	counted, trips map[int64]int64 // unix minute -> count
	peaks          map[uint64]*peak
	dropped        bool // MaxKeys reached: some keys were not remembered
}

type peak struct {
	label   string
	max     float64
	at      time.Time
	tripped bool
}

// NewRecorder records for the rules of an engine, indexed as engine.Rules.
func NewRecorder(rs []*rules.Rule) *Recorder {
	r := &Recorder{rules: rs, per: make([]ruleRec, len(rs))}
	for i := range r.per {
		r.per[i] = ruleRec{counted: map[int64]int64{}, trips: map[int64]int64{}, peaks: map[uint64]*peak{}}
	}
	return r
}

// limit is what the report compares counts with.
func limit(rl *rules.Rule) float64 {
	if rl.Requests > 0 {
		return rl.Requests
	}
	return 1
}

// Count records one counting step.
func (r *Recorder) Count(c engine.Counted) {
	rec := &r.per[c.Rule]
	min := c.Time.Unix() / 60
	rec.counted[min]++
	if c.Result.Exceeded {
		rec.trips[min]++
	}
	p, ok := rec.peaks[c.Key]
	if !ok {
		if c.Result.Count < limit(r.rules[c.Rule])/2 && !c.Result.Exceeded {
			return
		}
		if len(rec.peaks) >= MaxKeys {
			rec.dropped = true
			return
		}
		p = &peak{label: label(engine.ScopeOf(r.rules[c.Rule], c.Values))}
		rec.peaks[c.Key] = p
	}
	if c.Result.Exceeded {
		p.tripped = true
	}
	if c.Result.Count > p.max {
		p.max, p.at = c.Result.Count, c.Time
	}
}

func label(sc []characteristics.Field) string {
	var b strings.Builder
	for i, f := range sc {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(sc) > 1 || f.Name != "ip.src" {
			b.WriteString(f.Name)
			b.WriteByte('=')
		}
		b.WriteString(f.Value)
	}
	return b.String()
}

// Info is what the replay itself knows.
type Info struct {
	Files            []string
	Lines, Malformed int64
	Mitigated        int64 // requests an active mitigation applied to
	First, Last      time.Time
	Elapsed          time.Duration
	Generated        time.Time
	// Throttled is what each throttle rule refused (pipeline.Report's
	// Throttled): a request-time limit trips nothing and mitigates nothing.
	Throttled []pipeline.Throttled
	// Clients is pipeline.Report's Clients, for the summary; nil when the
	// replay did not follow clients.
	Clients []pipeline.Client
}

// Replay is the report's data.
type Replay struct {
	Info
	Start time.Time     // first bin
	Bin   time.Duration // width of a bin
	Bins  int
	Rules []RuleReport
	Top   []KeyReport // the most mitigated keys, all rules
}

// RuleReport is one rule's part.
type RuleReport struct {
	Name, Title, Action string
	Limit               float64
	Period              time.Duration
	Counted, Trips      []int64 // per bin
	TotalCounted        int64
	TotalTrips          int64
	Mitigations         int
	Closest             []Closeness // keys that never tripped, closest to the limit first
	Dropped             bool        // more keys came near the limit than were remembered
}

// Closeness is how near a key came to a rule's limit.
type Closeness struct {
	Key   string
	Peak  float64
	Ratio float64 // Peak / Limit
	At    time.Time
}

// KeyReport is one mitigated key.
type KeyReport struct {
	Rule, Action, Key string
	Requests          int64 // requests the mitigation applied to
	Trips             int64
	First, Last       time.Time
}

// Report assembles the data of the report from what was recorded and the
// engine's mitigations; topN bounds the key lists (0 means 10).
func (r *Recorder) Report(info Info, ms []pipeline.Mitigation, topN int) *Replay {
	if topN <= 0 {
		topN = 10
	}
	rep := &Replay{Info: info}
	var lo, hi int64 = 1 << 62, -1 << 62
	for _, rec := range r.per {
		for m := range rec.counted {
			lo, hi = min(lo, m), max(hi, m)
		}
	}
	if hi < lo {
		lo, hi = info.First.Unix()/60, info.First.Unix()/60
	}
	span := hi - lo + 1 // minutes
	binMin := max(int64(1), (span+119)/120)
	rep.Start, rep.Bin = time.Unix(lo*60, 0).UTC(), time.Duration(binMin)*time.Minute
	rep.Bins = int((span + binMin - 1) / binMin)
	perRule := make([]int, len(r.rules))
	for _, m := range ms {
		for i, rl := range r.rules {
			if rl.Name == m.Rule {
				perRule[i]++
			}
		}
	}
	for i, rl := range r.rules {
		rec := &r.per[i]
		rr := RuleReport{Name: rl.Name, Title: rl.Title, Action: rl.Action.String(), Limit: limit(rl), Period: rl.Period,
			Counted: make([]int64, rep.Bins), Trips: make([]int64, rep.Bins), Mitigations: perRule[i], Dropped: rec.dropped}
		for m, n := range rec.counted {
			rr.Counted[(m-lo)/binMin] += n
			rr.TotalCounted += n
		}
		for m, n := range rec.trips {
			rr.Trips[(m-lo)/binMin] += n
			rr.TotalTrips += n
		}
		for _, p := range rec.peaks {
			if !p.tripped {
				rr.Closest = append(rr.Closest, Closeness{Key: p.label, Peak: p.max, Ratio: p.max / rr.Limit, At: p.at})
			}
		}
		slices.SortFunc(rr.Closest, func(a, b Closeness) int {
			return cmp.Or(cmp.Compare(b.Ratio, a.Ratio), strings.Compare(a.Key, b.Key))
		})
		rr.Closest = rr.Closest[:min(len(rr.Closest), topN)]
		rep.Rules = append(rep.Rules, rr)
	}
	for _, m := range ms {
		rep.Top = append(rep.Top, KeyReport{Rule: m.Rule, Action: m.Action.String(), Key: label(m.Scope),
			Requests: m.Count, Trips: m.Trips, First: m.FirstSeen, Last: m.LastSeen})
	}
	slices.SortFunc(rep.Top, func(a, b KeyReport) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Key, b.Key))
	})
	rep.Top = rep.Top[:min(len(rep.Top), topN*2)]
	return rep
}

// Package report draws what people would rather look at than read: the HTML
// report of a replay (`guardd replay --html FILE`) and the live status page
// of the admin listener.
//
// Both pages are one self-contained HTML document: styles inline, charts as
// inline SVG drawn here, no script, and a Content-Security-Policy that
// forbids every fetch, so opening a report never reaches the network. Both
// open with a summary (Replay.Summary, Status.ActedBy): who was acted on, by
// which action, challenged beside blocked, and by which rules. The
// replay report then shows, per rule, the requests it counted and the trips over
// time, the most mitigated keys, and for each rule how close the busiest keys
// that never tripped came to its limit: the view to tune thresholds with. A
// Recorder gathers that during the replay through engine.SetOnCount; its
// memory is bounded (per rule, per minute counters, and at most MaxKeys keys
// that came within half of the limit).
package report

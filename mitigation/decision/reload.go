package decision

import (
	"time"

	"github.com/guardd/guardd/config"
)

// Reloaders are the decision API's parts in a reload, in the order they
// must run: before the rules' reloader, whose SetRules builds the throttle
// rules with the limiter's new settings.
//
//   - shadowban: routes, templates and headers, swapped live.
//   - decision: shed_after live; the listener, its event loops, counting at
//     decision time and the challenge gate are made at start.
//   - throttle: counting.max_keys (new local tables, counts afresh) and
//     throttle_shadow live; the in-flight timeout and the shedding classes
//     and signals are made at start.
func (h *Handler) Reloaders() []config.Reloader {
	return []config.Reloader{
		{Name: "shadowban", Live: []string{"shadowban"},
			Apply: func(_, n *config.Config) error { return h.shadow.Set(n.Shadowban) }},
		{Name: "decision", Live: []string{"decision.shed_after"},
			Restart: []string{"decision.listen", "decision.loops", "decision.count", "challenge"},
			Apply: func(_, n *config.Config) error {
				h.setShed(n.Decision.ShedAfter)
				return nil
			}},
		{Name: "throttle", Live: []string{"counting.max_keys", "decision.throttle_shadow"},
			Restart: []string{"decision.in_flight_timeout", "shedding"},
			Doc:     map[string]string{"counting.max_keys": "counters start afresh"},
			Apply: func(_, n *config.Config) error {
				return h.limiter.Reconfigure(n.Counting.MaxKeys, n.Decision.ThrottleShadow)
			}},
	}
}

// setShed sets ShedAfter; 0 means 100ms.
func (h *Handler) setShed(d time.Duration) {
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	h.shed.Store(int64(d))
}

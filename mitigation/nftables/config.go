package nftables

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// Defaults for zero Config fields.
const (
	DefaultTable             = "guardd"
	DefaultFamily            = "inet"
	DefaultIPv6Bits          = 64
	DefaultBatchElements     = 4096
	DefaultPollInterval      = 250 * time.Millisecond
	DefaultReconcileInterval = 5 * time.Minute
)

// Config configures a Pusher. The zero value pushes firewall mitigations into
// table inet guardd with a drop chain on the input hook at priority 0
// (filter).
type Config struct {
	// Table is the nftables table guardd creates or uses; "" means
	// DefaultTable. Up to 255 bytes of [A-Za-z0-9_.-].
	Table string
	// Family is the table's family: "inet" (default). With SetsOnly it may
	// also be "ip", "ip6", "bridge" or "netdev", for a table of the
	// operator's whose rules reference the sets.
	Family string
	// Hooks lists the hooks that get a drop chain: "input" and/or "forward";
	// nil means input only. Ignored with SetsOnly.
	Hooks []string
	// Priority is the chains' priority; 0 is the filter priority. Lower runs
	// earlier (-150 is mangle, -300 raw).
	Priority int
	// SetsOnly creates and fills the sets and nothing else: no chain, no
	// rule. For operators who reference the sets from their own rules (which
	// must sit in the same table).
	SetsOnly bool
	// SetPrefix is put before the set names (v4, v6, v4net, v6net), to keep
	// them apart from the operator's own sets in a shared table.
	SetPrefix string
	// Actions lists the mitigation actions that are pushed; nil means
	// firewall only. Accepted: firewall, block.
	Actions []mitigation.Action
	// IPv6Bits is the prefix length at which a single IPv6 address is
	// banned: 0 means DefaultIPv6Bits (/64, what one subscriber usually
	// holds); 128 bans the address alone. Prefix mitigations are pushed as
	// they are.
	IPv6Bits int
	// Allowlist holds the networks that are never mitigated (pass the
	// store's allowlist): an IPv6 address whose widened prefix would
	// overlap one is banned alone, in the v6 set. The store already refuses
	// mitigations on allowlisted addresses and prefixes themselves.
	Allowlist []netip.Prefix
	// BatchElements caps the set elements in one netlink batch; 0 means
	// DefaultBatchElements. A prefix counts as two (start and end).
	BatchElements int
	// PollInterval is how often the store's change feed is read; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// ReconcileInterval is how often the kernel's sets are read back and
	// repaired; 0 means DefaultReconcileInterval, negative disables the
	// periodic reconcile (the one at start still runs).
	ReconcileInterval time.Duration
	// NetNSFd is a file descriptor of the network namespace to work in; 0
	// means the process's own.
	NetNSFd int
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}

var families = map[string]byte{"inet": 1, "ip": 2, "ip6": 10, "bridge": 7, "netdev": 5}

// withDefaults validates c and fills its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if err := checkName("table", c.Table); err != nil {
		return c, err
	}
	if c.SetPrefix != "" {
		if err := checkName("set_prefix", c.SetPrefix); err != nil {
			return c, err
		}
	}
	if c.Family == "" {
		c.Family = DefaultFamily
	}
	if _, ok := families[c.Family]; !ok {
		return c, fmt.Errorf("nftables: family %q; expect 'inet', 'ip', 'ip6', 'bridge' or 'netdev'", c.Family)
	}
	if !c.SetsOnly {
		if c.Family != "inet" {
			return c, fmt.Errorf("nftables: family %q needs sets_only; guardd's drop chains live in an inet table", c.Family)
		}
		if c.Hooks == nil {
			c.Hooks = []string{"input"}
		}
		if len(c.Hooks) == 0 {
			return c, fmt.Errorf("nftables: hooks is empty; expect 'input' and/or 'forward', or sets_only")
		}
		seen := map[string]bool{}
		for _, h := range c.Hooks {
			if h != "input" && h != "forward" {
				return c, fmt.Errorf("nftables: hook %q; expect 'input' or 'forward'", h)
			}
			if seen[h] {
				return c, fmt.Errorf("nftables: hook %q listed twice", h)
			}
			seen[h] = true
		}
	}
	if c.Priority < math.MinInt32 || c.Priority > math.MaxInt32 {
		return c, fmt.Errorf("nftables: priority %d out of range", c.Priority)
	}
	if c.Actions == nil {
		c.Actions = []mitigation.Action{mitigation.ActionFirewall}
	}
	for _, a := range c.Actions {
		if a != mitigation.ActionFirewall && a != mitigation.ActionBlock {
			return c, fmt.Errorf("nftables: action %q cannot be pushed; expect 'firewall' or 'block'", a)
		}
	}
	switch {
	case c.IPv6Bits == 0:
		c.IPv6Bits = DefaultIPv6Bits
	case c.IPv6Bits < 16 || c.IPv6Bits > 128:
		return c, fmt.Errorf("nftables: ipv6_bits %d; expect 16 to 128", c.IPv6Bits)
	}
	switch {
	case c.BatchElements == 0:
		c.BatchElements = DefaultBatchElements
	case c.BatchElements < 2 || c.BatchElements > 1<<16:
		return c, fmt.Errorf("nftables: batch_elements %d; expect 2 to 65536", c.BatchElements)
	}
	switch {
	case c.PollInterval == 0:
		c.PollInterval = DefaultPollInterval
	case c.PollInterval < 0:
		return c, fmt.Errorf("nftables: poll_interval %s is negative", c.PollInterval)
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = DefaultReconcileInterval
	}
	allow := make([]netip.Prefix, len(c.Allowlist))
	for i, p := range c.Allowlist {
		if !p.IsValid() {
			return c, fmt.Errorf("nftables: allowlist prefix %d is invalid", i+1)
		}
		allow[i] = p.Masked()
	}
	c.Allowlist = allow
	if c.NetNSFd < 0 {
		return c, fmt.Errorf("nftables: netns fd %d is negative", c.NetNSFd)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

func checkName(field, s string) error {
	if len(s) > 255 {
		return fmt.Errorf("nftables: %s %q is longer than 255 bytes", field, s[:32]+"...")
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}); i >= 0 {
		return fmt.Errorf("nftables: %s %q: byte %d is not one of [A-Za-z0-9_.-]", field, s, i+1)
	}
	return nil
}

func (c Config) pushes(a mitigation.Action) bool { return slices.Contains(c.Actions, a) }

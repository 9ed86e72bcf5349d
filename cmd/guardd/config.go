package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/blocklist"
	"github.com/guardd/guardd/mitigation/crowdsec"
	"github.com/guardd/guardd/mitigation/nftables"
	"github.com/guardd/guardd/shadowban"

	"go.yaml.in/yaml/v3"
)

// Config is guardd's configuration file. Every field's zero value means its
// default, so an empty file runs the built-in rules on nginx's combined format.
type Config struct {
	Log             LogConfig             `yaml:"log"`
	Rules           RulesConfig           `yaml:"rules"`
	Characteristics CharacteristicsConfig `yaml:"characteristics"`
	Counting        CountingConfig        `yaml:"counting"`
	Mitigation      MitigationConfig      `yaml:"mitigation"`
	Fingerprint     FingerprintConfig     `yaml:"fingerprint"`
	Sources         SourcesConfig         `yaml:"sources"`
	Decision        DecisionConfig        `yaml:"decision"`
	Admin           AdminConfig           `yaml:"admin"`
	Shadowban       shadowban.Config      `yaml:"shadowban"`
	CrowdSec        CrowdSecConfig        `yaml:"crowdsec"`
	Blocklist       BlocklistConfig       `yaml:"blocklist"`
	Firewall        FirewallConfig        `yaml:"firewall"`
}

// FirewallConfig pushes mitigations to the host's packet filter.
type FirewallConfig struct {
	// NFTables, when present, keeps nftables sets in step (docs/firewall.md).
	NFTables *NFTablesConfig `yaml:"nftables"`
}

// NFTablesConfig is the nftables pusher's configuration; zero values are its
// defaults (table inet guardd, input hook, action firewall only, IPv6 bans
// widened to /64).
type NFTablesConfig struct {
	Table             string        `yaml:"table"`
	Family            string        `yaml:"family"`
	Hooks             []string      `yaml:"hooks"`
	Priority          int           `yaml:"priority"`
	SetsOnly          bool          `yaml:"sets_only"`
	SetPrefix         string        `yaml:"set_prefix"`
	Actions           []string      `yaml:"actions"`
	IPv6Bits          int           `yaml:"ipv6_bits"`
	BatchElements     int           `yaml:"batch_elements"`
	PollInterval      time.Duration `yaml:"poll_interval"`
	ReconcileInterval time.Duration `yaml:"reconcile_interval"`
}

// pusherConfig maps the YAML onto the nftables package's Config.
func (c *Config) pusherConfig() (nftables.Config, error) {
	n := c.Firewall.NFTables
	pc := nftables.Config{Table: n.Table, Family: n.Family, Hooks: n.Hooks, Priority: n.Priority, SetsOnly: n.SetsOnly,
		SetPrefix: n.SetPrefix, IPv6Bits: n.IPv6Bits, BatchElements: n.BatchElements, PollInterval: n.PollInterval,
		ReconcileInterval: n.ReconcileInterval, Allowlist: mustPrefixes(c.Mitigation.Allowlist.CIDRs)}
	for i, a := range n.Actions {
		act, err := mitigation.ParseAction(a)
		if err != nil {
			return pc, fmt.Errorf("firewall.nftables.actions[%d]: %w", i, err)
		}
		pc.Actions = append(pc.Actions, act)
	}
	return pc, nil
}

// CrowdSecConfig serves the CrowdSec bouncer API (docs/firewall.md).
type CrowdSecConfig struct {
	// Listen is host:port; empty means off.
	Listen          string `yaml:"listen"`
	crowdsec.Config `yaml:",inline"`
}

// BlocklistConfig serves plain-text blocklist feeds and keeps an nginx geo
// file (docs/firewall.md).
type BlocklistConfig struct {
	// Listen is host:port for the feeds; empty means no feeds.
	Listen           string `yaml:"listen"`
	blocklist.Config `yaml:",inline"`
	// NginxGeo, when set, keeps an nginx geo include file in step.
	NginxGeo *blocklist.GeoConfig `yaml:"nginx_geo"`
}

// SourcesConfig says what the daemon reads.
type SourcesConfig struct {
	Nginx NginxSource `yaml:"nginx"`
}

// NginxSource follows access logs.
type NginxSource struct {
	// Paths are files or globs, e.g. /var/log/nginx/*.access.log.
	Paths []string `yaml:"paths"`
	// Checkpoint keeps the read position across restarts; default
	// <mitigation.state_dir>/tail.json when a state_dir is set.
	Checkpoint string `yaml:"checkpoint"`
	// FromStart reads files met for the first time from their beginning
	// instead of their end.
	FromStart bool `yaml:"from_start"`
	// PollInterval backs up change notifications; default 250ms.
	PollInterval time.Duration `yaml:"poll_interval"`
}

// DecisionConfig is the decision API nginx's auth_request asks.
type DecisionConfig struct {
	// Listen is host:port; default 127.0.0.1:9480.
	Listen string `yaml:"listen"`
	// Loops is the number of event loops (threads) answering it; default 1,
	// which answers tens of thousands of decisions a second and leaves the
	// other cores to nginx. Raise it when rules fall back to the Rego
	// interpreter (guardd_rules_fallback_evaluations_total) and decisions
	// get slow. At most 64.
	Loops int `yaml:"loops"`
	// ShedAfter: a decision that waited longer than this in guardd is
	// answered 503 without evaluation; default 100ms.
	ShedAfter time.Duration `yaml:"shed_after"`
	// Count counts requests when nginx asks, for the rules that read only
	// what is known then (`guardd rules check` lists them), so the request
	// that trips such a rule is already mitigated. nginx must send
	// $request_id as X-Request-ID and log it ($request_id in log.format),
	// so the request's log line does not count those rules again.
	Count bool `yaml:"count"`
}

// AdminConfig is the admin API: mitigations, status and /metrics.
type AdminConfig struct {
	// Listen defaults to 127.0.0.1:9481. Keep it on loopback.
	Listen string `yaml:"listen"`
	// TokenFile holds the bearer token the admin API requires; default
	// <mitigation.state_dir>/admin.token, created on first start.
	TokenFile string `yaml:"token_file"`
}

// LogConfig says how to read access logs.
type LogConfig struct {
	// Format is "combined" (default), a bare nginx format string, or a pasted
	// log_format directive.
	Format string `yaml:"format"`
	// JSON reads one JSON object per line keyed by nginx variable names.
	JSON bool `yaml:"json"`
}

// RulesConfig says which rules to load.
type RulesConfig struct {
	// DisableBuiltin leaves the embedded library out.
	DisableBuiltin bool `yaml:"disable_builtin"`
	// Dirs are directories of *.rego rules (and *_test.rego tests).
	Dirs []string `yaml:"dirs"`
	// EvalTimeout bounds a full Rego evaluation; default 10ms.
	EvalTimeout time.Duration `yaml:"eval_timeout"`
}

// CharacteristicsConfig configures enrichment.
type CharacteristicsConfig struct {
	PrefixV4        int      `yaml:"prefix_v4"`
	PrefixV6        int      `yaml:"prefix_v6"`
	TrustedProxies  []string `yaml:"trusted_proxies"`
	ASNDatabase     string   `yaml:"asn_database"`
	CountryDatabase string   `yaml:"country_database"`
}

// CountingConfig bounds the counter tables.
type CountingConfig struct {
	// MaxKeys caps each rule's counter table; default 1,048,576.
	MaxKeys int `yaml:"max_keys"`
}

// MitigationConfig configures the mitigation table.
type MitigationConfig struct {
	// Allowlist holds CIDRs and characteristic values that are never mitigated.
	Allowlist AllowlistConfig `yaml:"allowlist"`
	// StateDir keeps active mitigations across restarts.
	StateDir string `yaml:"state_dir"`
	// MaxEntries caps the table; default 1,000,000.
	MaxEntries int `yaml:"max_entries"`
}

// AllowlistConfig lists what is never mitigated.
type AllowlistConfig struct {
	CIDRs []string `yaml:"cidrs"`
	// Values maps a characteristic name to values, e.g.
	// `http.headers["x-api-key"]: [partner-key]`.
	Values map[string][]string `yaml:"values"`
}

// FingerprintConfig configures the sniffer.
type FingerprintConfig struct {
	// DisableJA4H turns JA4H off (FoxIO License 1.1, non-commercial).
	DisableJA4H bool `yaml:"disable_ja4h"`
	// Interfaces to capture on live (AF_PACKET, needs CAP_NET_RAW); their
	// TLS, QUIC and HTTP fingerprints are joined to log lines by client
	// address and port. Empty: no live capture.
	Interfaces []string `yaml:"interfaces"`
	// BPF replaces the default capture filter (which passes only what
	// fingerprinting needs), e.g. "tcp port 443 or udp port 443".
	BPF string `yaml:"bpf"`
	// JoinTTL is how long a connection's fingerprints wait for its log
	// lines; default 1m.
	JoinTTL time.Duration `yaml:"join_ttl"`
}

// loadConfig reads path strictly: unknown keys are errors, and every error
// names the file and line. An empty path gives the defaults.
func loadConfig(path string) (*Config, error) {
	cfg := &Config{}
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := decodeConfig(data, cfg); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return cfg, nil
}

func decodeConfig(data []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return cfg.validate()
}

func (c *Config) validate() error {
	for i, s := range c.Characteristics.TrustedProxies {
		if _, err := parsePrefixOrAddr(s); err != nil {
			return fmt.Errorf("characteristics.trusted_proxies[%d]: %q: want a CIDR or an address", i, s)
		}
	}
	for i, s := range c.Mitigation.Allowlist.CIDRs {
		if _, err := parsePrefixOrAddr(s); err != nil {
			return fmt.Errorf("mitigation.allowlist.cidrs[%d]: %q: want a CIDR or an address", i, s)
		}
	}
	if _, err := c.allowlist(); err != nil {
		return err
	}
	if c.Decision.Loops < 0 || c.Decision.Loops > 64 {
		return fmt.Errorf("decision.loops: %d: want 1 to 64 (0 means 1)", c.Decision.Loops)
	}
	if c.Decision.ShedAfter < 0 {
		return fmt.Errorf("decision.shed_after: %s: want a positive duration", c.Decision.ShedAfter)
	}
	if c.Counting.MaxKeys < 0 {
		return fmt.Errorf("counting.max_keys: %d: want 0 (default) or more", c.Counting.MaxKeys)
	}
	if c.Firewall.NFTables != nil {
		// The pusher itself validates the rest when the daemon builds it.
		if _, err := c.pusherConfig(); err != nil {
			return err
		}
	}
	if _, err := shadowban.New(c.Shadowban); err != nil {
		return err
	}
	if c.Rules.DisableBuiltin && len(c.Rules.Dirs) == 0 {
		return errors.New("rules: builtin disabled and no dirs given: there would be no rules")
	}
	return nil
}

// allowlist builds the mitigation allowlist, checking characteristic names.
func (c *Config) allowlist() (mitigation.Allowlist, error) {
	a := mitigation.Allowlist{Prefixes: mustPrefixes(c.Mitigation.Allowlist.CIDRs)}
	names := make([]string, 0, len(c.Mitigation.Allowlist.Values))
	for n := range c.Mitigation.Allowlist.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ch, err := characteristics.Parse(n)
		if err != nil {
			return a, fmt.Errorf("mitigation.allowlist.values: %w", err)
		}
		for _, v := range c.Mitigation.Allowlist.Values[n] {
			a.Values = append(a.Values, mitigation.Pair{Name: ch.String(), Value: v})
		}
	}
	return a, nil
}

func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func mustPrefixes(ss []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, _ := parsePrefixOrAddr(s) // validated
		out = append(out, p)
	}
	return out
}

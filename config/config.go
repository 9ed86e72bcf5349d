package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/blocklist"
	"github.com/guardd/guardd/mitigation/crowdsec"
	"github.com/guardd/guardd/mitigation/nftables"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/shadowban"
)

// Defaults of the addresses and directories the daemon opens.
const (
	DefaultStateDir       = "/var/lib/guardd"
	DefaultDecisionListen = "127.0.0.1:9480"
	DefaultAdminListen    = "127.0.0.1:9481"
)

// Config is guardd's configuration file. Fields left out keep Default's
// values; a zero value that Default does not set means the component's own
// default, documented on the field.
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
	Shedding        SheddingConfig        `yaml:"shedding"`
	Scoring         ScoringConfig         `yaml:"scoring"`
	// Fleet, when present, shares budgets and mitigations with other nodes
	// through Redis (docs/fleet.md).
	Fleet *FleetConfig `yaml:"fleet"`

	// File is the path Load read, "" for Default.
	File string `yaml:"-"`
	// lines maps dotted field paths to the line they were set on, paths
	// "line:column" positions of values to their paths.
	lines map[string]int
	paths map[string]string
}

// FleetConfig is fleet mode (DESIGN.md "Fleet mode"): several nodes, one
// budget per rule and key and one set of mitigations, through Redis.
type FleetConfig struct {
	// Node is unique per node; "" means the host name.
	Node  string           `yaml:"node"`
	Redis FleetRedisConfig `yaml:"redis"`
}

// FleetRedisConfig says where Redis is.
type FleetRedisConfig struct {
	// Addresses: the server (standalone), the sentinels, or some cluster
	// nodes, as host:port.
	Addresses []string `yaml:"addresses"`
	// Mode is standalone (default), sentinel or cluster.
	Mode string `yaml:"mode"`
	// MasterName is the sentinel master set (sentinel mode only).
	MasterName string `yaml:"master_name"`
}

// NodeName returns Node, or the host name when it is empty.
func (f *FleetConfig) NodeName() (string, error) {
	if f.Node != "" {
		return f.Node, nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("fleet.node: not set and no host name: %v", err)
	}
	return h, nil
}

// Options returns the Redis connection options, validated.
func (f *FleetConfig) Options() (redis.Options, error) {
	mode, err := redis.ParseMode(f.Redis.Mode)
	if err != nil {
		return redis.Options{}, fieldErrorf("fleet.redis.mode", "%v", err)
	}
	o := redis.Options{Addresses: f.Redis.Addresses, Mode: mode, MasterName: f.Redis.MasterName}
	if _, err := redis.NewConn(o); err != nil {
		return redis.Options{}, fieldErrorf("fleet.redis", "%v", err)
	}
	return o, nil
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
	Actions           []Action      `yaml:"actions"`
	IPv6Bits          int           `yaml:"ipv6_bits"`
	BatchElements     int           `yaml:"batch_elements"`
	PollInterval      time.Duration `yaml:"poll_interval"`
	ReconcileInterval time.Duration `yaml:"reconcile_interval"`
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
	// <mitigation.state_dir>/tail.json.
	Checkpoint string `yaml:"checkpoint"`
	// FromStart reads files met for the first time from their beginning
	// instead of their end.
	FromStart bool `yaml:"from_start"`
	// PollInterval backs up change notifications; 0 means 250ms.
	PollInterval time.Duration `yaml:"poll_interval"`
}

// DecisionConfig is the decision API nginx's auth_request asks.
type DecisionConfig struct {
	// Listen is host:port; default 127.0.0.1:9480.
	Listen string `yaml:"listen"`
	// Loops is the number of event loops (threads) answering it; 0 means 1,
	// which answers tens of thousands of decisions a second and leaves the
	// other cores to nginx. Raise it when rules fall back to the Rego
	// interpreter (guardd_rules_fallback_evaluations_total) and decisions
	// get slow. At most 64.
	Loops int `yaml:"loops"`
	// ShedAfter: a decision that waited longer than this in guardd is
	// answered 503 without evaluation; 0 means 100ms.
	ShedAfter time.Duration `yaml:"shed_after"`
	// Count counts requests when nginx asks, for the rules that read only
	// what is known then (`guardd rules check` lists them), so the request
	// that trips such a rule is already mitigated. nginx must send
	// $request_id as X-Request-ID and log it ($request_id in log.format),
	// so the request's log line does not count those rules again.
	Count bool `yaml:"count"`
	// ThrottleShadow puts every throttle rule (action: throttle) in shadow
	// mode: counted and decided, never refused; what would have been
	// refused is counted and logged. A rule's own shadow: true does the
	// same for that rule.
	ThrottleShadow bool `yaml:"throttle_shadow"`
	// InFlightTimeout: a request counted by a concurrency rule is taken to
	// be done after this long when its log line has not come; 0 means 1m.
	InFlightTimeout time.Duration `yaml:"in_flight_timeout"`
}

// SheddingConfig sheds the least important traffic classes with 503 while
// the upstream is overloaded (docs/rules.md, "Load shedding"). No classes:
// off.
type SheddingConfig struct {
	// Classes, most important first; each is the requests that the count
	// expression of one of its rules holds for. The class without rules
	// takes the rest (default: the last class).
	Classes []ShedClassConfig `yaml:"classes"`
	// Latency: the mean request time in the access log over an interval
	// above which the upstream is overloaded; 0: not a signal.
	Latency time.Duration `yaml:"latency"`
	// ErrorRate: the share of 5xx in the access log over an interval; 0:
	// not a signal.
	ErrorRate float64 `yaml:"error_rate"`
	// InFlight: requests asked about and not yet logged; 0: not a signal.
	InFlight int `yaml:"in_flight"`
	// Interval between evaluations; 0 means 1s. Hold: how long a level is
	// kept before stepping down, and the Retry-After of a shed request; 0
	// means 10s. Recover: a level steps down when every signal is below
	// recover times its threshold; 0 means 0.8.
	Interval time.Duration `yaml:"interval"`
	Hold     time.Duration `yaml:"hold"`
	Recover  float64       `yaml:"recover"`
	// Adaptive learns the in-flight threshold by AIMD, starting at
	// InFlight, with Latency as the target (docs/rules.md).
	Adaptive bool `yaml:"adaptive"`
}

// ShedClassConfig is one traffic class.
type ShedClassConfig struct {
	Name  string   `yaml:"name"`
	Rules []string `yaml:"rules"`
}

// Throttle is the shedding configuration as package throttle takes it.
func (s SheddingConfig) Throttle() throttle.ShedConfig {
	c := throttle.ShedConfig{Latency: s.Latency, ErrorRate: s.ErrorRate, InFlight: s.InFlight, Interval: s.Interval, Hold: s.Hold, Recover: s.Recover,
		Adaptive: s.Adaptive}
	for _, k := range s.Classes {
		c.Classes = append(c.Classes, throttle.ShedClass{Name: k.Name, Rules: k.Rules})
	}
	return c
}

// AdminConfig is the admin API: mitigations, status and /metrics.
type AdminConfig struct {
	// Listen defaults to 127.0.0.1:9481. Keep it on loopback: Warnings
	// names any other address.
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
	// EvalTimeout bounds a full Rego evaluation; 0 means 10ms.
	EvalTimeout time.Duration `yaml:"eval_timeout"`
	// LoginPaths are the site's login endpoints, which the built-in brute
	// force and credential stuffing rules watch (rules read them as
	// data.guardd.config.login_paths, login_prefixes and login_suffixes):
	// "/exact/path", "/prefix/*" or "*/end", matched without regard to
	// case. The list replaces the built-in one; empty keeps the built-in
	// one (docs/rules.md).
	LoginPaths []string `yaml:"login_paths"`
}

// CharacteristicsConfig configures enrichment.
type CharacteristicsConfig struct {
	// PrefixV4 and PrefixV6 are the lengths of ip.src.prefix; 0 means 24
	// and 64.
	PrefixV4 int `yaml:"prefix_v4"`
	PrefixV6 int `yaml:"prefix_v6"`
	// TrustedProxies are the networks (or addresses) whose
	// X-Forwarded-For is believed.
	TrustedProxies  []Prefix `yaml:"trusted_proxies"`
	ASNDatabase     string   `yaml:"asn_database"`
	CountryDatabase string   `yaml:"country_database"`
	// CrawlerRanges replaces the embedded table of crawlers' published
	// address ranges (bot.name, bot.verified); TLSClients the embedded
	// table of TLS client stacks by JA4 (tls.client). See docs/rules.md.
	CrawlerRanges string `yaml:"crawler_ranges"`
	TLSClients    string `yaml:"tls_clients"`
}

// CountingConfig bounds the counter tables.
type CountingConfig struct {
	// MaxKeys caps each rule's counter table; 0 means 1,048,576.
	MaxKeys int `yaml:"max_keys"`
}

// MitigationConfig configures the mitigation table.
type MitigationConfig struct {
	// Allowlist holds CIDRs and characteristic values that are never mitigated.
	Allowlist AllowlistConfig `yaml:"allowlist"`
	// StateDir keeps active mitigations across restarts; default
	// /var/lib/guardd.
	StateDir string `yaml:"state_dir"`
	// MaxEntries caps the table; 0 means 1,000,000.
	MaxEntries int `yaml:"max_entries"`
}

// AllowlistConfig lists what is never mitigated.
type AllowlistConfig struct {
	CIDRs []Prefix `yaml:"cidrs"`
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
	// lines; 0 means 1m.
	JoinTTL time.Duration `yaml:"join_ttl"`
}

// Default is the configuration of an empty file: the built-in rules on
// nginx's combined format, the APIs on loopback.
func Default() *Config {
	return &Config{
		Log:        LogConfig{Format: "combined"},
		Mitigation: MitigationConfig{StateDir: DefaultStateDir},
		Decision:   DecisionConfig{Listen: DefaultDecisionListen},
		Admin:      AdminConfig{Listen: DefaultAdminListen},
		Scoring:    DefaultScoring,
	}
}

// Load reads path: defaults, strict decode, Validate. An empty path gives
// Default.
func Load(path string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// Parse decodes and validates data, read from file (used in errors).
func Parse(file string, data []byte) (*Config, error) {
	cfg := Default()
	cfg.File = file
	if err := cfg.decode(data); err != nil {
		return nil, cfg.wrap(err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, cfg.wrap(err)
	}
	return cfg, nil
}

func (c *Config) decode(data []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return syntaxLine(data, err)
	}
	c.lines, c.paths = map[string]int{}, map[string]string{}
	index(&root, "", c.lines, c.paths)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	// A section named but left empty means "on, with defaults".
	if _, ok := c.lines["firewall.nftables"]; ok && c.Firewall.NFTables == nil {
		c.Firewall.NFTables = &NFTablesConfig{}
	}
	if _, ok := c.lines["blocklist.nginx_geo"]; ok && c.Blocklist.NginxGeo == nil {
		c.Blocklist.NginxGeo = &blocklist.GeoConfig{}
	}
	return nil
}

// Line returns the line a dotted field path (as in errors:
// "characteristics.trusted_proxies[1]") was set on, 0 if it was not.
func (c *Config) Line(path string) int { return c.lines[path] }

// Validate checks what decoding cannot: ranges, names, and that the parts
// agree. Its errors name the field's dotted path.
func (c *Config) Validate() error {
	if err := checkDurations(c); err != nil {
		return err
	}
	if _, err := c.Allowlist(); err != nil {
		return err
	}
	if c.Decision.Loops < 0 || c.Decision.Loops > 64 {
		return fieldErrorf("decision.loops", "%d: want 1 to 64 (0 means 1)", c.Decision.Loops)
	}
	if c.Counting.MaxKeys < 0 {
		return fieldErrorf("counting.max_keys", "%d: want 0 (default) or more", c.Counting.MaxKeys)
	}
	if c.Mitigation.MaxEntries < 0 {
		return fieldErrorf("mitigation.max_entries", "%d: want 0 (default) or more", c.Mitigation.MaxEntries)
	}
	if p := c.Characteristics.PrefixV4; p < 0 || p > 32 {
		return fieldErrorf("characteristics.prefix_v4", "%d: want 1 to 32 (0 means 24)", p)
	}
	if p := c.Characteristics.PrefixV6; p < 0 || p > 128 {
		return fieldErrorf("characteristics.prefix_v6", "%d: want 1 to 128 (0 means 64)", p)
	}
	if _, err := shadowban.New(c.Shadowban); err != nil {
		return fieldErrorf("shadowban", "%v", err)
	}
	if sc := c.Shedding.Throttle(); len(sc.Classes) > 0 {
		if err := sc.Validate(); err != nil {
			return fieldErrorf("shedding", "%v", err)
		}
	}
	if c.Fleet != nil {
		if _, err := c.Fleet.Options(); err != nil {
			return err
		}
		if _, err := c.Fleet.NodeName(); err != nil {
			return err
		}
	}
	for i, p := range c.Rules.LoginPaths {
		if err := rules.CheckLoginPath(p); err != nil {
			return fieldErrorf(fmt.Sprintf("rules.login_paths[%d]", i), "%v", err)
		}
	}
	if _, err := c.Scoring.Scorer(c.Characteristics.PrefixV4, c.Characteristics.PrefixV6); err != nil {
		return fieldErrorf("scoring", "%v", err)
	}
	if c.Rules.DisableBuiltin && len(c.Rules.Dirs) == 0 {
		return fieldErrorf("rules", "builtin disabled and no dirs given: there would be no rules")
	}
	return nil
}

// Warnings lists what is allowed but probably a mistake: an admin API bound
// to an address other than loopback.
func (c *Config) Warnings() []string {
	var w []string
	if !loopback(c.Admin.Listen) {
		w = append(w, fmt.Sprintf("admin.listen %s is not a loopback address: the admin API (mitigations, pprof) is reachable from the network, behind its token only", c.Admin.Listen))
	}
	return w
}

// loopback reports whether a host:port listens on loopback only.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Allowlist builds the mitigation allowlist, checking characteristic names.
func (c *Config) Allowlist() (mitigation.Allowlist, error) {
	a := mitigation.Allowlist{Prefixes: Prefixes(c.Mitigation.Allowlist.CIDRs)}
	names := make([]string, 0, len(c.Mitigation.Allowlist.Values))
	for n := range c.Mitigation.Allowlist.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ch, err := characteristics.Parse(n)
		if err != nil {
			return a, fieldErrorf("mitigation.allowlist.values."+n, "%v", err)
		}
		for _, v := range c.Mitigation.Allowlist.Values[n] {
			a.Values = append(a.Values, mitigation.Pair{Name: ch.String(), Value: v})
		}
	}
	return a, nil
}

// Enrich is the enricher's configuration.
func (c *Config) Enrich() characteristics.EnrichConfig {
	return characteristics.EnrichConfig{
		PrefixV4: c.Characteristics.PrefixV4, PrefixV6: c.Characteristics.PrefixV6,
		TrustedProxies: Prefixes(c.Characteristics.TrustedProxies),
		ASNDatabase:    c.Characteristics.ASNDatabase, CountryDatabase: c.Characteristics.CountryDatabase,
		CrawlerRanges: c.Characteristics.CrawlerRanges, TLSClients: c.Characteristics.TLSClients,
	}
}

// NFTables maps firewall.nftables onto the nftables package's Config; ok is
// false when the section is absent.
func (c *Config) NFTables() (pc nftables.Config, ok bool) {
	n := c.Firewall.NFTables
	if n == nil {
		return pc, false
	}
	pc = nftables.Config{Table: n.Table, Family: n.Family, Hooks: n.Hooks, Priority: n.Priority, SetsOnly: n.SetsOnly,
		SetPrefix: n.SetPrefix, IPv6Bits: n.IPv6Bits, BatchElements: n.BatchElements, PollInterval: n.PollInterval,
		ReconcileInterval: n.ReconcileInterval, Allowlist: Prefixes(c.Mitigation.Allowlist.CIDRs)}
	for _, a := range n.Actions {
		pc.Actions = append(pc.Actions, a.Action)
	}
	return pc, true
}

// Inputs lists what a daemon with c reads, for guardd check and the start-up
// log line.
func (c *Config) Inputs() []string {
	var in []string
	if len(c.Sources.Nginx.Paths) > 0 {
		in = append(in, "nginx logs "+strings.Join(c.Sources.Nginx.Paths, ", "))
	} else {
		in = append(in, "no nginx logs (sources.nginx.paths is empty: guardd run refuses this)")
	}
	if len(c.Fingerprint.Interfaces) > 0 {
		in = append(in, "capture on "+strings.Join(c.Fingerprint.Interfaces, ", "))
	}
	return in
}

// Outputs lists where a daemon with c enforces or publishes mitigations.
func (c *Config) Outputs() []string {
	out := []string{"decision API on " + cmp.Or(c.Decision.Listen, DefaultDecisionListen), "admin API on " + cmp.Or(c.Admin.Listen, DefaultAdminListen)}
	if c.CrowdSec.Listen != "" {
		out = append(out, "CrowdSec bouncer API on "+c.CrowdSec.Listen)
	}
	if c.Blocklist.Listen != "" {
		out = append(out, "blocklist feed on "+c.Blocklist.Listen)
	}
	if c.Blocklist.NginxGeo != nil {
		out = append(out, "nginx geo file")
	}
	if f := c.Fleet; f != nil {
		out = append(out, fmt.Sprintf("fleet-wide counts and mitigations through Redis (%s) at %s", cmp.Or(f.Redis.Mode, "standalone"), strings.Join(f.Redis.Addresses, ", ")))
	}
	if pc, ok := c.NFTables(); ok {
		out = append(out, "nftables table "+cmp.Or(pc.Table, "guardd"))
	}
	return out
}

// StateFile is a file in the state directory.
func (c *Config) StateFile(name string) string {
	return c.Mitigation.StateDir + string(os.PathSeparator) + name
}

// Checkpoint is where the tailer keeps its read position.
func (c *Config) Checkpoint() string {
	if c.Sources.Nginx.Checkpoint != "" {
		return c.Sources.Nginx.Checkpoint
	}
	return c.StateFile("tail.json")
}

// TokenFile is the admin token's file.
func (c *Config) TokenFile() string {
	if c.Admin.TokenFile != "" {
		return c.Admin.TokenFile
	}
	return c.StateFile("admin.token")
}

// Clone returns a copy that shares nothing mutable with c, for a caller that
// overrides fields (replay's flags).
func (c *Config) Clone() *Config {
	d := *c
	d.Rules.Dirs = slices.Clone(c.Rules.Dirs)
	d.Rules.LoginPaths = slices.Clone(c.Rules.LoginPaths)
	return &d
}

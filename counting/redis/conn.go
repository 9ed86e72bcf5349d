package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/redis/rueidis"
)

// Mode is how the Redis deployment is reached.
type Mode uint8

// Modes (DESIGN.md, fleet.redis.mode). The zero value is Standalone.
const (
	Standalone Mode = iota
	Sentinel
	Cluster
	numModes
)

var modeNames = [numModes]string{Standalone: "standalone", Sentinel: "sentinel", Cluster: "cluster"}

// String returns the configuration name, or "other".
func (m Mode) String() string {
	if m < numModes {
		return modeNames[m]
	}
	return "other"
}

// ParseMode parses fleet.redis.mode; "" means Standalone.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return Standalone, nil
	}
	for m, n := range modeNames {
		if s == n {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("counting/redis: unknown mode %q; expect 'standalone', 'sentinel' or 'cluster'", s)
}

// Options says where Redis is. The zero value of each optional field means
// its default.
type Options struct {
	// Addresses are host:port of the server (standalone), of the sentinels
	// (sentinel) or of some cluster nodes (cluster).
	Addresses []string
	Mode      Mode
	// MasterName is the sentinel master set; required in sentinel mode,
	// ignored in the others (DESIGN.md's example sets it beside
	// standalone).
	MasterName string
	// Username and Password authenticate, when set.
	Username, Password string
	// DialTimeout bounds one connection attempt; 0 means 1s. Connecting
	// happens off the request path.
	DialTimeout time.Duration
}

// ErrNotConnected is returned while no connection to Redis has been made.
var ErrNotConnected = errors.New("counting/redis: not connected")

// Conn is guardd's connection to Redis, for the counting tier and for
// mitigation propagation. It wraps rueidis: commands issued concurrently
// are pipelined automatically, scripts run by EVALSHA and fall back to
// EVAL, Cluster commands are routed by slot, and nothing is ever read from
// a replica. It connects lazily: a Conn made while Redis is down works once
// Redis is back. Safe for concurrent use.
type Conn struct {
	opt Options

	mu     sync.Mutex
	client rueidis.Client // nil until connected

	// scripts are the counter scripts, run by Apply with EVALSHA (EVAL
	// on NOSCRIPT). Not rueidis.Lua's ExecMulti: it loads the script on
	// every cluster node before each call and fails the whole call when
	// one node is down, which would tie every master's breaker to the
	// worst one (and cost a round trip per flush).
	scripts [counting.GCRA + 1]script
	nodes   *rueidis.Lua
	publish *rueidis.Lua
	active  *rueidis.Lua
}

// NewConn validates opt. It does not connect: the first command does.
func NewConn(opt Options) (*Conn, error) {
	if len(opt.Addresses) == 0 {
		return nil, fmt.Errorf("counting/redis: no addresses")
	}
	for _, a := range opt.Addresses {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("counting/redis: address %q: %w", a, err)
		}
	}
	if opt.Mode >= numModes {
		return nil, fmt.Errorf("counting/redis: unknown mode %d", opt.Mode)
	}
	if opt.Mode == Sentinel && opt.MasterName == "" {
		return nil, fmt.Errorf("counting/redis: sentinel mode needs master_name")
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = time.Second
	}
	c := &Conn{opt: opt}
	c.scripts[counting.SlidingWindow] = newScript(luaSlidingWindow)
	c.scripts[counting.FixedWindow] = newScript(luaFixedWindow)
	c.scripts[counting.SlidingLog] = newScript(luaSlidingLog)
	c.scripts[counting.TokenBucket] = newScript(luaTokenBucket)
	c.scripts[counting.GCRA] = newScript(luaGCRA)
	c.nodes = rueidis.NewLuaScript(luaNodes)
	c.publish = rueidis.NewLuaScript(luaPublish)
	c.active = rueidis.NewLuaScript(luaActive)
	return c, nil
}

// topologyRefresh is how often the client re-reads which server is master
// (Sentinel) or which master serves each slot (Cluster), besides reacting
// to events and redirections.
const topologyRefresh = 2 * time.Second

// connect returns the client, making it if needed. Only one attempt runs
// at a time; others fail fast rather than queue behind a dial.
func (c *Conn) connect() (rueidis.Client, error) {
	if !c.mu.TryLock() {
		return nil, ErrNotConnected
	}
	defer c.mu.Unlock()
	if c.client != nil {
		return c.client, nil
	}
	o := rueidis.ClientOption{
		InitAddress:  c.opt.Addresses,
		Username:     c.opt.Username,
		Password:     c.opt.Password,
		DisableCache: true,
		// Failures are the circuit breaker's business: a command is not
		// retried behind the caller's back.
		DisableRetry:      true,
		Dialer:            net.Dialer{Timeout: c.opt.DialTimeout, KeepAlive: time.Second},
		ConnWriteTimeout:  c.opt.DialTimeout,
		ClientName:        "guardd",
		BlockingPoolSize:  4,
		AlwaysPipelining:  true,
		PipelineMultiplex: 2,
	}
	switch c.opt.Mode {
	case Standalone:
		o.ForceSingleClient = true
	case Sentinel:
		// The sentinel client follows +switch-master events; the periodic
		// check recovers from a missed one, which would otherwise bind the
		// client to a demoted master for good.
		o.Sentinel = rueidis.SentinelOption{MasterSet: c.opt.MasterName, Username: c.opt.Username, Password: c.opt.Password,
			TopologyRefreshInterval: topologyRefresh}
	case Cluster:
		// The cluster client re-reads the slots on MOVED and when a
		// connection closes; the periodic scan also catches a failover
		// whose new master it has not been sent to yet, so that the
		// breaker of the promoted replica's endpoint is not fed errors
		// from the dead master.
		o.ClusterOption.ShardsRefreshInterval = topologyRefresh
	}
	cl, err := rueidis.NewClient(o)
	if err != nil {
		return nil, fmt.Errorf("counting/redis: connect %s %s: %w", c.opt.Mode, strings.Join(c.opt.Addresses, ","), err)
	}
	if c.opt.Mode == Cluster && len(cl.Nodes()) < 1 {
		cl.Close()
		return nil, fmt.Errorf("counting/redis: %s: no cluster nodes", strings.Join(c.opt.Addresses, ","))
	}
	c.client = cl
	return cl, nil
}

func (c *Conn) get() (rueidis.Client, error) {
	c.mu.Lock()
	cl := c.client
	c.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	return c.connect()
}

// Close closes the connection. Safe to repeat.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}

// Topology returns the endpoints the counters' keys live on (Router): the
// masters by address in a Cluster, read with CLUSTER SLOTS from the first
// node that answers; one endpoint otherwise (the server, or the Sentinel
// master set, which the client follows through failovers).
func (c *Conn) Topology(ctx context.Context) ([]string, []uint16, error) {
	if c.opt.Mode != Cluster {
		return []string{c.endpointName()}, nil, nil
	}
	// Only once connected (by the flushes): a background refresh must
	// not connect a Conn that was closed meanwhile.
	c.mu.Lock()
	cl := c.client
	c.mu.Unlock()
	if cl == nil {
		return nil, nil, ErrNotConnected
	}
	nodes := cl.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	var first error
	for _, a := range addrs {
		tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		names, slots, err := clusterSlots(tctx, nodes[a])
		cancel()
		if err == nil {
			return names, slots, nil
		}
		if first == nil {
			first = fmt.Errorf("counting/redis: cluster slots from %s: %w", a, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = fmt.Errorf("counting/redis: cluster slots: no node known")
	}
	return nil, nil, first
}

func (c *Conn) endpointName() string {
	if c.opt.Mode == Sentinel {
		return "sentinel/" + c.opt.MasterName
	}
	return c.opt.Addresses[0]
}

// clusterSlots asks one node for CLUSTER SLOTS: each range's first
// address is its master. Slots no master serves go to the first master
// (their commands fail, and count against its breaker).
func clusterSlots(ctx context.Context, n rueidis.Client) ([]string, []uint16, error) {
	ranges, err := n.Do(ctx, n.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, nil, err
	}
	type span struct {
		lo, hi int64
		addr   string
	}
	var spans []span
	for _, r := range ranges {
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			return nil, nil, fmt.Errorf("cluster slots: malformed range")
		}
		lo, err1 := f[0].AsInt64()
		hi, err2 := f[1].AsInt64()
		m, err3 := f[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(m) < 2 || lo < 0 || hi >= Slots || lo > hi {
			return nil, nil, fmt.Errorf("cluster slots: malformed range")
		}
		host, _ := m[0].ToString()
		port, err := m[1].AsInt64()
		if err != nil {
			return nil, nil, fmt.Errorf("cluster slots: malformed port")
		}
		spans = append(spans, span{lo, hi, net.JoinHostPort(host, strconv.FormatInt(port, 10))})
	}
	if len(spans) == 0 {
		return nil, nil, fmt.Errorf("cluster slots: no slot assigned")
	}
	var names []string
	for _, s := range spans {
		if !slices.Contains(names, s.addr) {
			names = append(names, s.addr)
		}
	}
	slices.Sort(names)
	slots := make([]uint16, Slots)
	for _, s := range spans {
		i := uint16(slices.Index(names, s.addr))
		for k := s.lo; k <= s.hi; k++ {
			slots[k] = i
		}
	}
	return names, slots, nil
}

// Ping checks that endpoint name (from Topology) answers.
func (c *Conn) Ping(ctx context.Context, name string) error {
	cl, err := c.get()
	if err != nil {
		return err
	}
	if c.opt.Mode == Cluster {
		n, ok := cl.Nodes()[name]
		if !ok {
			return fmt.Errorf("counting/redis: ping %s: not a known cluster node", name)
		}
		cl = n
	}
	if err := cl.Do(ctx, cl.B().Ping().Build()).Error(); err != nil {
		return fmt.Errorf("counting/redis: ping %s: %w", name, err)
	}
	return nil
}

// Op is one node's report for one key of one rule (see scripts.go).
type Op struct {
	Alg     counting.Algorithm
	Key     string  // "guardd:{rule:key}"
	Delta   float64 // events counted beyond the node's lease
	Release float64 // unused lease handed back
	RelWin  int64   // window (or grant time, sliding_log) of the release
	Held    float64 // lease the node keeps
	Want    float64 // the lease asked for (0: none)
	Nodes   int
	Period  int64 // µs
	Limit   float64
	Burst   float64
	Member  string // unique per flush, sliding_log only
	// Flush is the node's flush interval, µs: with Want, its rate, by
	// which a grant is paced (scripts.go); 0 grants without pacing.
	Flush int64
}

// Apply runs each op's script, pipelined (one EVALSHA per key, however
// many events its delta carries), and stores each op's state or error in
// out, which must be as long as ops. It returns the first error, if any.
func (c *Conn) Apply(ctx context.Context, ops []Op, states []State, errs []error) error {
	cl, err := c.get()
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return err
	}
	args := func(o *Op) []string {
		return []string{
			strconv.FormatFloat(o.Delta, 'g', -1, 64),
			strconv.FormatFloat(o.Release, 'g', -1, 64),
			strconv.FormatInt(o.RelWin, 10),
			strconv.FormatFloat(o.Held, 'g', -1, 64),
			strconv.FormatFloat(o.Want, 'g', -1, 64),
			strconv.Itoa(o.Nodes),
			strconv.FormatInt(o.Period, 10),
			strconv.FormatFloat(o.Limit, 'g', -1, 64),
			strconv.FormatFloat(o.Burst, 'g', -1, 64),
			o.Member,
			strconv.FormatInt(o.Flush, 10),
		}
	}
	var idx []int
	cmds := make(rueidis.Commands, 0, len(ops))
	for i := range ops {
		o := &ops[i]
		if int(o.Alg) >= len(c.scripts) {
			errs[i] = fmt.Errorf("unknown algorithm %d", o.Alg)
			continue
		}
		idx = append(idx, i)
		cmds = append(cmds, cl.B().Evalsha().Sha1(c.scripts[o.Alg].sha).Numkeys(1).Key(o.Key).Arg(args(o)...).Build())
	}
	var again []int
	for j, r := range cl.DoMulti(ctx, cmds...) {
		i := idx[j]
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			again = append(again, i)
			continue
		}
		states[i], errs[i] = parseState(r)
	}
	if len(again) > 0 {
		// A server that has not seen the script (new, restarted or
		// flushed) gets it whole; EVAL caches it there for the next
		// EVALSHA.
		cmds = cmds[:0]
		for _, i := range again {
			o := &ops[i]
			cmds = append(cmds, cl.B().Eval().Script(c.scripts[o.Alg].body).Numkeys(1).Key(o.Key).Arg(args(o)...).Build())
		}
		for j, r := range cl.DoMulti(ctx, cmds...) {
			states[again[j]], errs[again[j]] = parseState(r)
		}
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("counting/redis: %s %s: %w", ops[i].Alg, ops[i].Key, err)
		}
	}
	return nil
}

// script is a Lua script and its SHA-1, for EVALSHA.
type script struct{ body, sha string }

func newScript(body string) script {
	h := sha1.Sum([]byte(body))
	return script{body: body, sha: hex.EncodeToString(h[:])}
}

func parseState(r rueidis.RedisResult) (State, error) {
	v, err := r.AsStrSlice()
	if err != nil {
		return State{}, err
	}
	if len(v) != 8 {
		return State{}, fmt.Errorf("script returned %d values, want 8", len(v))
	}
	var f [8]float64
	for i, s := range v {
		if f[i], err = strconv.ParseFloat(s, 64); err != nil {
			return State{}, fmt.Errorf("script value %d %q: %w", i, s, err)
		}
	}
	return State{Win: int64(f[0]), Cur: f[1], Prev: f[2], At: int64(f[3]), Usage: f[4], Reset: int64(f[5]), Now: int64(f[6]), Grant: f[7]}, nil
}

// Heartbeat registers node as live and returns how many nodes were seen
// within ttl.
func (c *Conn) Heartbeat(ctx context.Context, node string, ttl time.Duration) (int, error) {
	cl, err := c.get()
	if err != nil {
		return 0, err
	}
	n, err := c.nodes.Exec(ctx, cl, []string{"guardd:{fleet}:nodes"}, []string{node, strconv.FormatInt(ttl.Microseconds(), 10)}).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("counting/redis: heartbeat: %w", err)
	}
	return int(n), nil
}

// Nodes returns the names of the nodes seen within ttl, for guardd status.
func (c *Conn) Nodes(ctx context.Context, ttl time.Duration) ([]string, error) {
	cl, err := c.get()
	if err != nil {
		return nil, err
	}
	t, err := cl.Do(ctx, cl.B().Time().Build()).AsStrSlice()
	if err != nil || len(t) != 2 {
		return nil, fmt.Errorf("counting/redis: time: %w", err)
	}
	sec, _ := strconv.ParseInt(t[0], 10, 64)
	usec, _ := strconv.ParseInt(t[1], 10, 64)
	min := sec*1e6 + usec - ttl.Microseconds()
	v, err := cl.Do(ctx, cl.B().Zrangebyscore().Key("guardd:{fleet}:nodes").Min(strconv.FormatInt(min, 10)).Max("+inf").Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("counting/redis: nodes: %w", err)
	}
	return v, nil
}

// Keys of mitigation propagation; one hash tag keeps them on one slot.
const (
	mitActive = "guardd:{mitigations}:active"
	mitExpiry = "guardd:{mitigations}:expiry"
	mitStream = "guardd:{mitigations}:stream"
)

// StreamMaxLen bounds the mitigation stream (approximately, MAXLEN ~). A
// node disconnected for longer than it takes to publish this many changes
// misses some and should be restarted to reload the active set.
const StreamMaxLen = 100_000

// Publish records a mitigation change in the active set and appends it to
// the stream, atomically. del removes field from the active set.
func (c *Conn) Publish(ctx context.Context, field string, payload []byte, expires time.Time, del bool) error {
	cl, err := c.get()
	if err != nil {
		return err
	}
	op := "add"
	if del {
		op = "del"
	}
	err = c.publish.Exec(ctx, cl, []string{mitActive, mitExpiry, mitStream},
		[]string{op, field, string(payload), strconv.FormatInt(expires.UnixMilli(), 10), strconv.Itoa(StreamMaxLen)}).Error()
	if err != nil {
		return fmt.Errorf("counting/redis: publish mitigation: %w", err)
	}
	return nil
}

// Active returns the active mitigations (field to payload) and the stream
// ID to read changes from after them.
func (c *Conn) Active(ctx context.Context) (last string, set map[string][]byte, err error) {
	cl, err := c.get()
	if err != nil {
		return "", nil, err
	}
	v, err := c.active.Exec(ctx, cl, []string{mitActive, mitExpiry, mitStream}, nil).AsStrSlice()
	if err != nil {
		return "", nil, fmt.Errorf("counting/redis: active mitigations: %w", err)
	}
	if len(v) < 1 || len(v)%2 != 1 {
		return "", nil, fmt.Errorf("counting/redis: active mitigations: %d values", len(v))
	}
	set = make(map[string][]byte, len(v)/2)
	for i := 1; i+1 < len(v); i += 2 {
		set[v[i]] = []byte(v[i+1])
	}
	return v[0], set, nil
}

// Change is one entry of the mitigation stream.
type Change struct {
	ID      string
	Del     bool
	Field   string
	Payload []byte
}

// Read returns the changes after ID after, waiting up to block for one.
func (c *Conn) Read(ctx context.Context, after string, block time.Duration, count int) ([]Change, error) {
	cl, err := c.get()
	if err != nil {
		return nil, err
	}
	cmd := cl.B().Xread().Count(int64(count)).Block(block.Milliseconds()).Streams().Key(mitStream).Id(after).Build()
	res, err := cl.Do(ctx, cmd).AsXRead()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("counting/redis: read mitigation stream: %w", err)
	}
	var out []Change
	for _, e := range res[mitStream] {
		out = append(out, Change{ID: e.ID, Del: e.FieldValues["op"] == "del", Field: e.FieldValues["f"], Payload: []byte(e.FieldValues["p"])})
	}
	return out, nil
}

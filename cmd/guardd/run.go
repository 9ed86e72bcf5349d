package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/ingest/pipe"
	"github.com/guardd/guardd/ingest/sniff"
	"github.com/guardd/guardd/ingest/syslog"
	"github.com/guardd/guardd/ingest/tail"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/admin"
	"github.com/guardd/guardd/mitigation/decision"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/report"
	"github.com/guardd/guardd/shadowban"
)

func init() {
	register("run", "run the daemon: tail nginx logs, count, and answer nginx at request time", runDaemon)
}

func runDaemon(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	configPath := fs.String("config", defaultConfigPath, "configuration file (YAML)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	stdin := fs.Bool("stdin", false, "also read access log lines from standard input (docker logs -f nginx | guardd run --stdin); sets sources.stdin")
	pos, code, done := parseFlags(fs, "usage: guardd run [--config FILE] [--log-level LEVEL] [--stdin]\n\nRuns the daemon: follows nginx's access logs, counts, trips rules, and answers\nnginx's auth_request.", args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "guardd run: takes no arguments; did you mean --config", pos[0]+"?")
		return 2
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(stderr, "guardd run: --log-level:", err)
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv}))
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, "guardd run:", err)
		return 1
	}
	cfg.Sources.Stdin = cfg.Sources.Stdin || *stdin
	d, err := newDaemon(*configPath, cfg, logger, prometheus.NewRegistry())
	if err != nil {
		fmt.Fprintln(stderr, "guardd run:", err)
		return 1
	}
	d.stdinFlag = *stdin
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := d.Run(ctx); err != nil {
		logger.Error("guardd stopped", "err", err)
		return 1
	}
	return 0
}

// daemon is `guardd run`: one of each component, wired.
type daemon struct {
	path    string
	log     *slog.Logger
	reg     *prometheus.Registry
	cfg     atomic.Pointer[config.Config]
	pipes   *pipeline.Holder
	pm      *pipeline.Metrics
	store   *mitigation.Store
	dec     *decision.Handler
	shadow  *shadowban.Responder // the decision API's shadow-ban answers
	limits  *throttle.Limiter    // request-time limits: in flight, shedding
	fleet   *fleetParts          // nil without fleet mode
	decSrv  *http1.Server
	admin   http.Handler
	tailer  *tail.Tailer   // nil without sources.nginx.paths
	syslog  *syslog.Server // nil without sources.syslog.listen
	stdin   io.Reader      // read with sources.stdin; pipe.StdinFile() unless a test sets it
	started time.Time
	m       daemonMetrics
	// reloaders are the components' parts in a reload (newReloaders).
	reloaders []config.Reloader
	startCfg  *config.Config // what the components were made with
	stdinFlag bool           // --stdin: sources.stdin whatever the file says

	join                *sniff.Join    // nil without live capture
	counted             *counting.Seen // request IDs counted at decision time; nil without decision.count
	outputs             []output       // firewall-facing components
	decisionLn, adminLn net.Listener
	lastEvent           atomic.Int64 // unix nanoseconds of the newest event read
	// tailStats is a copy of the tailer's counters, published from its own
	// goroutine (the only one that may read them while it runs).
	tailStats atomic.Pointer[tail.Stats]
}

type daemonMetrics struct {
	reloadOK, reloadTS prometheus.Gauge
	restart            prometheus.Gauge
}

func newDaemon(path string, cfg *config.Config, logger *slog.Logger, reg *prometheus.Registry) (*daemon, error) {
	if len(cfg.Sources.Nginx.Paths) == 0 && len(cfg.Sources.Syslog.Listen) == 0 && !cfg.Sources.Stdin {
		return nil, errors.New("config: sources: no access logs to read (give sources.nginx.paths, sources.syslog.listen or --stdin)")
	}
	if cfg.Mitigation.StateDir == "" {
		cfg.Mitigation.StateDir = config.DefaultStateDir
	}
	if err := os.MkdirAll(cfg.Mitigation.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("mitigation.state_dir: %w", err)
	}
	d := &daemon{path: path, log: logger, reg: reg, started: time.Now()}
	for _, w := range cfg.Warnings() {
		logger.Warn(w)
	}
	d.cfg.Store(cfg)
	d.startCfg = cfg
	d.registerMetrics()
	allow, err := cfg.Allowlist()
	if err != nil {
		return nil, err
	}
	d.store, err = mitigation.New(mitigation.Config{MaxEntries: cfg.Mitigation.MaxEntries, StateDir: cfg.Mitigation.StateDir, Allowlist: allow}, reg, logger)
	if err != nil {
		return nil, err
	}
	if err := d.build(cfg); err != nil {
		if d.pipes != nil {
			d.pipes.Close()
		}
		d.fleet.close()
		d.store.Close()
		return nil, err
	}
	d.reloaders = d.newReloaders(cfg)
	return d, nil
}

// registerMetrics registers the process's and the reload's metrics, and
// the pipeline's.
func (d *daemon) registerMetrics() {
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.m = daemonMetrics{
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "guardd_config_last_reload_successful", Help: "Whether the last configuration (re)load succeeded, every component taking it."}),
		restart:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "guardd_config_restart_pending", Help: "Configuration keys changed at the last reload that take effect only on a restart."}),
		reloadTS: prometheus.NewGauge(prometheus.GaugeOpts{Name: "guardd_config_last_reload_success_timestamp_seconds", Help: "When the configuration was last (re)loaded successfully."}),
	}
	d.reg.MustRegister(d.m.reloadOK, d.m.reloadTS, d.m.restart)
	d.pm = pipeline.NewMetrics(d.reg)
}

// build makes the components around the store, in the order they need one
// another: fleet mode, the rules' pipeline, the decision API, the admin
// API, the outputs and the sources. On an error the caller closes what was
// made.
func (d *daemon) build(cfg *config.Config) error {
	var err error
	if d.fleet, err = newFleet(cfg, d.store, d.reg, d.log); err != nil {
		return err
	}
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{Logger: d.log, Registerer: d.reg, NewCounter: d.fleet.engineCounter(), NewDistinct: d.fleet.engineDistinct()})
	if err != nil {
		return err
	}
	d.pipes = pipeline.NewHolder(p)
	d.reloaded(true)
	if err := d.buildDecision(cfg); err != nil {
		return err
	}
	token, err := admin.LoadToken(cfg.TokenFile())
	if err != nil {
		return err
	}
	if d.admin, err = admin.New(admin.Config{Store: d.store, Token: token, Gatherer: d.reg, Status: d.status, Logger: d.log,
		StatusPage: &statusPage{d: d, rates: &report.DecisionRates{Gatherer: d.reg, Start: d.started}}, Explain: d.explain, Deleted: d.deleted}); err != nil {
		return err
	}
	if err := d.buildOutputs(cfg); err != nil {
		return err
	}
	if err := d.buildSources(cfg); err != nil {
		return err
	}
	d.registerGauges()
	return nil
}

// buildDecision makes the decision API: counting at decision time, the
// request-time limiter, the fingerprint join, the challenge gate, the
// handler and its server.
func (d *daemon) buildDecision(cfg *config.Config) error {
	d.shadow, _ = shadowban.New(cfg.Shadowban) // validated
	var counter decision.Counter
	var err error
	if cfg.Decision.Count {
		if d.counted, err = counting.NewSeen(1<<20, 2*time.Minute); err != nil {
			return err
		}
		counter = &pipeline.RequestCounter{Pipelines: d.pipes, Seen: d.counted, Store: d.store, Metrics: d.pm, Logger: d.log}
	}
	var fleetCounter throttle.NewCounter
	if d.fleet != nil {
		fleetCounter = d.fleet.newCounter
	}
	d.limits, err = throttle.New(throttle.Config{NewCounter: fleetCounter, Shadow: cfg.Decision.ThrottleShadow, MaxKeys: cfg.Counting.MaxKeys,
		Shedding: cfg.Shedding.Throttle(), InFlightTimeout: cfg.Decision.InFlightTimeout, Registerer: d.reg, Logger: d.log})
	if err != nil {
		return err
	}
	// The sniffer's fingerprints join both the decide requests and the log
	// lines (by address and port), so a tls.ja4 mitigation applies at the
	// decision API as a replay judges it.
	var join decision.Joiner
	if len(cfg.Fingerprint.Interfaces) > 0 {
		d.join = sniff.NewJoin(cfg.Fingerprint.JoinTTL, 0)
		join = d.join
	}
	gate, err := newChallengeGate(cfg, d.store, d.reg, d.log)
	if err != nil {
		return err
	}
	// The holder is the decision API's enricher: a reload reaches it, and a
	// MaxMind reader is closed only once no decision uses it.
	d.dec, err = decision.New(decision.Config{Store: d.store, Rules: d.pipes.Load().Rules(), Enricher: d.pipes, Join: join, Shadow: d.shadow, Counter: counter,
		Throttle: d.limits, ShedAfter: cfg.Decision.ShedAfter, Challenge: gate, Registerer: d.reg, Logger: d.log})
	if err != nil {
		return err
	}
	if d.decSrv, err = http1.New(http1.Config{Handler: d.dec, Loops: cfg.Decision.Loops, Logger: d.log}); err != nil {
		return err
	}
	registerServerStats(d.reg, d.decSrv)
	return nil
}

// buildSources makes the log tailer (from its checkpoint) and the syslog
// listeners; standard input is opened by Run.
func (d *daemon) buildSources(cfg *config.Config) error {
	start, err := tail.LoadCheckpoint(d.checkpointPath())
	if err != nil {
		d.log.Warn("tail checkpoint unreadable; starting as on a first start", "err", err)
		start = nil
	}
	if len(cfg.Sources.Nginx.Paths) > 0 {
		d.tailer, err = tail.New(tail.Config{Paths: cfg.Sources.Nginx.Paths, Start: start, FromStart: cfg.Sources.Nginx.FromStart,
			PollInterval: cfg.Sources.Nginx.PollInterval, Logger: d.log})
		if err != nil {
			return err
		}
	}
	if sc := cfg.Sources.Syslog; len(sc.Listen) > 0 {
		d.syslog, err = syslog.New(syslog.Config{Listen: sc.Listeners(), ReadBuffer: sc.ReadBuffer, MaxMessage: sc.MaxMessage, Registerer: d.reg, Logger: d.log})
		if err != nil {
			return err
		}
	}
	return nil
}

// registerGauges exports the tail's lag and the counters' keys.
func (d *daemon) registerGauges() {
	d.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_tail_lag_seconds", Help: "Wall-clock time minus the time of the newest event read from the logs."}, func() float64 {
			if t := d.lastEvent.Load(); t != 0 {
				return time.Since(time.Unix(0, t)).Seconds()
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_counting_keys", Help: "Keys tracked by the rules' counters."}, func() float64 {
			k, _ := d.pipes.Load().Engine().Keys()
			return float64(k)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_counting_evictions_total", Help: "Keys evicted from full counter tables (since the last rule reload)."}, func() float64 {
			_, e := d.pipes.Load().Engine().Keys()
			return float64(e)
		}),
	)
}

func (d *daemon) checkpointPath() string { return d.cfg.Load().Checkpoint() }

func (d *daemon) reloaded(ok bool) {
	if ok {
		d.m.reloadOK.Set(1)
		d.m.reloadTS.SetToCurrentTime()
	} else {
		d.m.reloadOK.Set(0)
	}
}

// listen opens the decision and admin listeners, so their addresses are
// known before Run starts serving.
func (d *daemon) listen() error {
	cfg := d.cfg.Load()
	var err error
	if d.decisionLn, err = net.Listen("tcp", or(cfg.Decision.Listen, config.DefaultDecisionListen)); err != nil {
		d.store.Close()
		return fmt.Errorf("decision.listen: %w", err)
	}
	if d.adminLn, err = net.Listen("tcp", or(cfg.Admin.Listen, config.DefaultAdminListen)); err != nil {
		d.decisionLn.Close()
		d.store.Close()
		return fmt.Errorf("admin.listen: %w", err)
	}
	if d.syslog != nil {
		if err := d.syslog.Listen(); err != nil {
			d.decisionLn.Close()
			d.adminLn.Close()
			d.store.Close()
			return fmt.Errorf("sources.syslog.listen: %w", err)
		}
	}
	return nil
}

// Run runs every component until ctx ends, then flushes state. It listens
// first unless listen was called.
func (d *daemon) Run(ctx context.Context) error {
	cfg := d.cfg.Load()
	var err error
	if d.decisionLn == nil {
		if err := d.listen(); err != nil {
			return err
		}
	}
	d.log.Info("guardd running", "decision", d.decisionLn.Addr().String(), "admin", d.adminLn.Addr().String(),
		"logs", cfg.Sources.Nginx.Paths, "syslog", cfg.Sources.Syslog.Listen, "stdin", cfg.Sources.Stdin, "rules", len(d.pipes.Load().Rules().Rules()), "mitigations", d.store.Len(),
		"inputs", cfg.Inputs(), "outputs", cfg.Outputs())
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.store.Run(ctx) })
	g.Go(func() error { return d.limits.Run(ctx) })
	if d.fleet != nil {
		d.fleet.run(ctx, g)
	}
	g.Go(func() error {
		defer d.decisionLn.Close()
		return d.decSrv.Serve(ctx, d.decisionLn)
	})
	g.Go(func() error { return serve(ctx, d.adminLn, d.admin) })
	g.Go(func() error { return d.runTail(ctx) })
	g.Go(func() error { return d.watch(ctx) })
	for _, o := range d.outputs {
		g.Go(func() error { return o.run(ctx) })
	}
	for _, ifc := range cfg.Fingerprint.Interfaces {
		g.Go(func() error { return d.sniff(ctx, ifc) })
	}
	err = g.Wait()
	d.fleet.close()
	if cerr := d.store.Close(); err == nil {
		err = cerr
	}
	d.pipes.Close()
	d.log.Info("guardd stopped")
	return err
}

// registerServerStats exports the decision server's connection counters.
func registerServerStats(reg prometheus.Registerer, srv *http1.Server) {
	stat := func(f func(http1.Stats) int64) func() float64 {
		return func() float64 { return float64(f(srv.Stats())) }
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_decision_connections", Help: "Open connections to the decision API."},
			stat(func(s http1.Stats) int64 { return s.Conns })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_decision_connections_rejected_total", Help: "Connections to the decision API closed at once: too many open."},
			stat(func(s http1.Stats) int64 { return s.Rejected })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_decision_bad_requests_total", Help: "Malformed requests to the decision API, answered 4xx/5xx and closed."},
			stat(func(s http1.Stats) int64 { return s.BadRequests })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_decision_timeouts_total", Help: "Decision API connections closed idle or with a stalled request."},
			stat(func(s http1.Stats) int64 { return s.Timeouts })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_decision_panics_total", Help: "Decision handler panics, answered 500."},
			stat(func(s http1.Stats) int64 { return s.Panics })),
	)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runTail follows the logs through the per-event path: batches parsed and
// evaluated on every core, counted in order, the checkpoint saved once their
// lines are counted.
func (d *daemon) runTail(ctx context.Context) error {
	var (
		lastSave time.Time
		lastPos  *tail.Position
	)
	save := func(pos tail.Position) {
		if err := tail.SaveCheckpoint(d.checkpointPath(), pos); err != nil {
			d.log.Warn("tail checkpoint not saved", "err", err)
		}
		lastSave = time.Now()
	}
	cfg := pipeline.Config{Pipelines: d.pipes, Store: d.store, Counted: d.counted, Metrics: d.pm, Logger: d.log,
		Applied: func(mark any, st *pipeline.Stats) {
			if t := st.Last.UnixNano(); !st.Last.IsZero() && t > d.lastEvent.Load() {
				d.lastEvent.Store(t)
			}
			pos, ok := mark.(tail.Position) // syslog and stdin mark nil
			if !ok {
				return
			}
			lastPos = &pos
			if time.Since(lastSave) > time.Second {
				save(pos)
			}
		}}
	if d.join != nil {
		cfg.Join = d.join
	}
	cfg.Observe = d.limits.Observe // in-flight release, shedding signals
	var srcs []pipeline.Source
	if d.tailer != nil {
		srcs = append(srcs, tailSource{d})
	}
	if d.syslog != nil {
		srcs = append(srcs, syslogSource{d.syslog})
	}
	if d.cfg.Load().Sources.Stdin {
		in := d.stdin
		if in == nil {
			in = pipe.StdinFile()
		}
		srcs = append(srcs, stdinSource{pipe.New(in, "stdin", 0), d.log})
	}
	_, err := pipeline.Run(ctx, cfg, pipeline.Merge(srcs...))
	if lastPos != nil {
		save(*lastPos)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// tailSource is the daemon's Source: the tailer's batches, each marked with
// the position after it.
type tailSource struct{ d *daemon }

func (s tailSource) Read(ctx context.Context, w *pipeline.Writer) error {
	return s.d.tailer.Run(ctx, func(lines []tail.Line, pos tail.Position) error {
		for _, l := range lines {
			if err := w.Line(l.Data, l.Path, l.Num); err != nil {
				return err
			}
		}
		st := s.d.tailer.Stats()
		s.d.tailStats.Store(&st)
		return w.Mark(pos)
	})
}

// syslogSource is the syslog listeners' Source.
type syslogSource struct{ s *syslog.Server }

func (s syslogSource) Read(ctx context.Context, w *pipeline.Writer) error { return s.s.Run(ctx, w) }

// stdinSource is standard input's Source; when the pipe closes, the other
// sources and the decision API go on.
type stdinSource struct {
	r   *pipe.Reader
	log *slog.Logger
}

func (s stdinSource) Read(ctx context.Context, w *pipeline.Writer) error {
	err := s.r.Read(ctx, w)
	if err == nil && ctx.Err() == nil {
		s.log.Info("standard input closed; the other sources and the decision API go on", "lines", s.r.Stats.Lines.Load())
	}
	return err
}

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/admin"
	"github.com/guardd/guardd/mitigation/bulk"
)

func init() {
	register("decisions", "list, add, delete, import or export mitigations of a running daemon", runDecisions)
	register("status", "show a running daemon's status", runStatus)
}

// defaultConfigPath is where the Debian package puts the configuration; the
// client commands read it when it exists and --config is not given.
const defaultConfigPath = "/etc/guardd/guardd.yaml"

const decisionsUsage = `usage: guardd decisions <verb> [flags] [arguments]

verbs:
  list                     the active mitigations (--json: one JSON object per line)
  add --scope C=V ...      add one mitigation (--action, --duration, --reason; --json)
  delete ID...             delete mitigations by ID
  import FILE              add many at once from JSON lines, CSV or a list of addresses/CIDRs ("-" reads stdin)
  export [FILE]            write the active mitigations as JSON lines, CSV or a list

Every verb takes --config FILE (default ` + defaultConfigPath + ` when present), --admin ADDR and
--token-file FILE to find the daemon. Run 'guardd decisions <verb> -h' for a verb's flags.`

// adminFlags registers the flags that find the daemon and returns the
// function that, once flags are parsed, reads the configuration and token.
func adminFlags(fs *flag.FlagSet) func() (*admin.Client, error) {
	configPath := fs.String("config", "", "read the admin address and token file from this configuration (default "+defaultConfigPath+" when present)")
	addr := fs.String("admin", "", "admin API address (default: admin.listen, else "+config.DefaultAdminListen+")")
	tokenFile := fs.String("token-file", "", "admin token file (default: admin.token_file, else <mitigation.state_dir>/admin.token, "+config.DefaultStateDir+"/admin.token)")
	return func() (*admin.Client, error) {
		path := *configPath
		if path == "" {
			if _, err := os.Stat(defaultConfigPath); err == nil {
				path = defaultConfigPath
			}
		}
		cfg, err := config.Load(path)
		if err != nil {
			return nil, err
		}
		if cfg.Mitigation.StateDir == "" {
			cfg.Mitigation.StateDir = config.DefaultStateDir
		}
		a := or(*addr, or(cfg.Admin.Listen, config.DefaultAdminListen))
		tf := or(*tokenFile, cfg.TokenFile())
		b, err := os.ReadFile(tf)
		if err != nil {
			return nil, fmt.Errorf("admin token: %w (run as a user who may read it, e.g. with sudo, or give --token-file)", err)
		}
		return admin.NewClient(a, strings.TrimSpace(string(b)), actorName(), 5*time.Minute), nil
	}
}

// actorName says who runs the CLI, for the daemon's log: user@host.
func actorName() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if s := os.Getenv("SUDO_USER"); s != "" {
		name = s + " (sudo)"
	}
	h, _ := os.Hostname()
	return name + "@" + h
}

func runDecisions(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, decisionsUsage)
		return 2
	}
	verb := args[0]
	switch verb {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, decisionsUsage)
		return 0
	}
	c := &decisionsCmd{verb: verb, fs: flag.NewFlagSet("decisions "+verb, flag.ContinueOnError), args: args, stdout: stdout, stderr: stderr}
	c.client = adminFlags(c.fs)
	verbs := map[string]func(*decisionsCmd) int{
		"list":   (*decisionsCmd).list,
		"add":    (*decisionsCmd).add,
		"delete": (*decisionsCmd).delete,
		"import": (*decisionsCmd).importFile,
		"export": (*decisionsCmd).export,
	}
	run, ok := verbs[verb]
	if !ok {
		fmt.Fprintf(stderr, "guardd decisions: unknown verb %q: want list, add, delete, import or export\n", verb)
		return 2
	}
	return run(c)
}

// decisionsCmd is one verb of guardd decisions: its flags, the admin API
// client they find, and where it writes.
type decisionsCmd struct {
	verb           string
	fs             *flag.FlagSet
	client         func() (*admin.Client, error)
	args           []string
	stdout, stderr io.Writer
}

// fail reports err and returns the exit status 1.
func (c *decisionsCmd) fail(err error) int {
	fmt.Fprintln(c.stderr, "guardd decisions "+c.verb+":", err)
	return 1
}

// list prints the active mitigations.
func (c *decisionsCmd) list() int {
	fs, client, args, stdout, stderr := c.fs, c.client, c.args, c.stdout, c.stderr
	asJSON := fs.Bool("json", false, "print one JSON object per mitigation per line: {\"id\",\"rule\",\"action\",\"scope\",\"created\",\"expires\",\"origin\"}")
	pos, code, done := parseFlags(fs, "usage: guardd decisions list [--json] [flags]", args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "guardd decisions list: takes no arguments")
		return 2
	}
	a, err := client()
	if err != nil {
		return c.fail(err)
	}
	var ms []mitigation.Mitigation
	if err := a.Do("GET", "/v1/mitigations", nil, &ms); err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if _, err := bulk.Write(stdout, bulk.JSONLines, ms); err != nil {
			return c.fail(err)
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACTION\tSCOPE\tRULE\tEXPIRES")
	for _, m := range ms {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", m.ID, m.Action, m.Scope, m.Rule, m.Expires.UTC().Format(time.RFC3339))
	}
	tw.Flush()
	return 0
}

// add adds one mitigation.
func (c *decisionsCmd) add() int {
	fs, client, args, stdout, stderr := c.fs, c.client, c.args, c.stdout, c.stderr
	var scopes stringList
	fs.Var(&scopes, "scope", "characteristic=value (repeatable, at least one), e.g. ip.src=203.0.113.7 or ip.src.prefix=198.51.100.0/24")
	action := fs.String("action", "block", strings.Join(slices.DeleteFunc(mitigation.Names(), func(a string) bool { return a == mitigation.ActionThrottle.String() }), ", ")+" ('guardd help actions')")
	duration := fs.String("duration", "1h", "how long, a Go duration such as 30m or 24h")
	reason := fs.String("reason", "", "why; the mitigation's rule reads \"manual: REASON\"")
	asJSON := fs.Bool("json", false, "print the added mitigation as one JSON object, as list --json does")
	pos, code, done := parseFlags(fs, "usage: guardd decisions add --scope C=V [--scope C=V ...] [--action A] [--duration D] [--reason TEXT] [--json] [flags]", args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 || len(scopes) == 0 {
		fmt.Fprintln(stderr, "usage: guardd decisions add --scope C=V [--scope C=V ...] [--action A] [--duration D] [--reason TEXT]")
		return 2
	}
	req := addRequest{Scope: map[string]string{}, Action: *action, Duration: *duration, Reason: *reason}
	for _, s := range scopes {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			fmt.Fprintf(stderr, "guardd decisions add: --scope %q: want characteristic=value\n", s)
			return 2
		}
		req.Scope[k] = v
	}
	a, err := client()
	if err != nil {
		return c.fail(err)
	}
	var m mitigation.Mitigation
	if err := a.DoJSON("POST", "/v1/mitigations", req, &m); err != nil {
		return c.fail(err)
	}
	if *asJSON {
		if _, err := bulk.Write(stdout, bulk.JSONLines, []mitigation.Mitigation{m}); err != nil {
			return c.fail(err)
		}
		return 0
	}
	fmt.Fprintf(stdout, "added %d: %s %s until %s\n", m.ID, m.Action, m.Scope, m.Expires.UTC().Format(time.RFC3339))
	return 0
}

// delete deletes mitigations by ID.
func (c *decisionsCmd) delete() int {
	fs, client, args, stdout, stderr := c.fs, c.client, c.args, c.stdout, c.stderr
	pos, code, done := parseFlags(fs, "usage: guardd decisions delete [flags] ID...", args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "usage: guardd decisions delete [flags] ID...")
		return 2
	}
	a, err := client()
	if err != nil {
		return c.fail(err)
	}
	for _, id := range pos {
		if err := a.Do("DELETE", "/v1/mitigations/"+id, nil, nil); err != nil {
			return c.fail(fmt.Errorf("%s: %w", id, err))
		}
		fmt.Fprintln(stdout, "deleted", id)
	}
	return 0
}

// importFile adds many mitigations at once from a file.
func (c *decisionsCmd) importFile() int {
	fs, client, args, stdout, stderr := c.fs, c.client, c.args, c.stdout, c.stderr
	format := fs.String("format", "", "jsonl, csv or list (default: from the file name: .csv, .txt/.list, else jsonl)")
	action := fs.String("action", "block", "action for records that name none")
	duration := fs.String("duration", "", "how long, for records without expires or duration (required for a list)")
	rule := fs.String("rule", "import", "rule name for records that name none")
	asJSON := fs.Bool("json", false, `print the outcome as one JSON object: {"added","allowlisted"}`)
	pos, code, done := parseFlags(fs, `usage: guardd decisions import [--format jsonl|csv|list] [--action A] [--duration D] [--rule NAME] [--json] [flags] FILE

Adds every mitigation in FILE at once, or none if a line is bad. FILE ("-" for
stdin) holds JSON lines (what 'export' and 'list --json' write), CSV with a
header row (columns: scope or value, and optionally characteristic, action,
duration, expires, rule, reason), or a list of addresses and CIDRs, one a line.
A bare value is an ip.src address, or an ip.src.prefix CIDR.`, args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: guardd decisions import [flags] FILE")
		return 2
	}
	d := bulk.Defaults{Rule: *rule}
	var err error
	if d.Action, err = mitigation.ParseAction(*action); err != nil {
		fmt.Fprintln(stderr, "guardd decisions import: --action:", err)
		return 2
	}
	if *duration != "" {
		if d.Duration, err = time.ParseDuration(*duration); err != nil || d.Duration <= 0 {
			fmt.Fprintf(stderr, "guardd decisions import: --duration %q: want a positive Go duration such as 30m or 24h\n", *duration)
			return 2
		}
	}
	f := bulk.FormatOf(pos[0])
	if *format != "" {
		if f, err = bulk.ParseFormat(*format); err != nil {
			fmt.Fprintln(stderr, "guardd decisions import: --format:", err)
			return 2
		}
	}
	in := io.Reader(os.Stdin)
	if pos[0] != "-" {
		file, err := os.Open(pos[0])
		if err != nil {
			return c.fail(err)
		}
		defer file.Close()
		in = file
	}
	ms, err := bulk.Read(in, f, d, time.Now())
	if err != nil {
		return c.fail(fmt.Errorf("%s: %w", pos[0], err))
	}
	a, err := client()
	if err != nil {
		return c.fail(err)
	}
	var body bytes.Buffer
	if _, err := bulk.Write(&body, bulk.JSONLines, ms); err != nil {
		return c.fail(err)
	}
	var res bulk.ImportResult
	if err := a.Do("POST", "/v1/mitigations/bulk", &body, &res); err != nil {
		return c.fail(err)
	}
	if *asJSON {
		writeJSONLine(stdout, res)
		return 0
	}
	fmt.Fprintf(stdout, "imported %d mitigations", res.Added)
	if res.Allowlisted > 0 {
		fmt.Fprintf(stdout, "; %d refused by the allowlist", res.Allowlisted)
	}
	fmt.Fprintln(stdout)
	return 0
}

// export writes the active mitigations to a file.
func (c *decisionsCmd) export() int {
	fs, client, args, stdout, stderr := c.fs, c.client, c.args, c.stdout, c.stderr
	format := fs.String("format", "", "jsonl, csv or list (default: from the file name, else jsonl)")
	pos, code, done := parseFlags(fs, `usage: guardd decisions export [--format jsonl|csv|list] [flags] [FILE]

Writes the active mitigations to FILE (default stdout) as JSON lines, CSV or a
list of addresses and CIDRs (single-address and single-prefix scopes only).`, args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "usage: guardd decisions export [flags] [FILE]")
		return 2
	}
	f := bulk.JSONLines
	if len(pos) == 1 {
		f = bulk.FormatOf(pos[0])
	}
	if *format != "" {
		var err error
		if f, err = bulk.ParseFormat(*format); err != nil {
			fmt.Fprintln(stderr, "guardd decisions export: --format:", err)
			return 2
		}
	}
	a, err := client()
	if err != nil {
		return c.fail(err)
	}
	var ms []mitigation.Mitigation
	if err := a.Do("GET", "/v1/mitigations", nil, &ms); err != nil {
		return c.fail(err)
	}
	out := stdout
	if len(pos) == 1 && pos[0] != "-" {
		file, err := os.Create(pos[0])
		if err != nil {
			return c.fail(err)
		}
		defer file.Close()
		out = file
	}
	skipped, err := bulk.Write(out, f, ms)
	if err != nil {
		return c.fail(err)
	}
	if skipped > 0 {
		fmt.Fprintf(stderr, "guardd decisions export: %d mitigations whose scope is not one address or prefix left out of the list\n", skipped)
	}
	if f, ok := out.(*os.File); ok && out != stdout {
		if err := f.Close(); err != nil {
			return c.fail(err)
		}
	}
	return 0
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	client := adminFlags(fs)
	asJSON := fs.Bool("json", false, "print the daemon's status as JSON (snake_case keys)")
	pos, code, done := parseFlags(fs, "usage: guardd status [--json] [flags]\n\nPrints a running daemon's status: uptime, rules, active mitigations by\naction, counter keys, the log tail's counts and, in fleet mode, Redis.", args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "guardd status: takes no arguments")
		return 2
	}
	a, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "guardd status:", err)
		return 1
	}
	var raw json.RawMessage
	if err := a.Do("GET", "/v1/status", nil, &raw); err != nil {
		fmt.Fprintln(stderr, "guardd status:", err)
		return 1
	}
	if *asJSON {
		var out bytes.Buffer
		json.Indent(&out, raw, "", "  ")
		fmt.Fprintln(stdout, out.String())
		return 0
	}
	var st statusView
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintln(stderr, "guardd status:", err)
		return 1
	}
	writeStatus(stdout, st)
	return 0
}

// statusView is /v1/status as the CLI reads it back.
type statusView struct {
	statusJSON
	Fleet *fleetJSON `json:"fleet,omitempty"`
}

func writeStatus(w io.Writer, st statusView) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "uptime\t%s\n", st.Uptime)
	last := "none yet"
	if t, err := time.Parse(time.RFC3339Nano, st.LastEvent); err == nil {
		last = t.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(tw, "last event\t%s\n", last)
	fmt.Fprintf(tw, "rules\t%d: %s\n", len(st.Rules), strings.Join(st.Rules, ", "))
	var by []string
	for _, a := range mitigation.Names() {
		if n := st.ByAction[a]; n > 0 {
			by = append(by, fmt.Sprintf("%s %d", a, n))
		}
	}
	if len(by) > 0 {
		fmt.Fprintf(tw, "mitigations\t%d (%s)\n", st.Mitigations, strings.Join(by, ", "))
	} else {
		fmt.Fprintf(tw, "mitigations\t%d\n", st.Mitigations)
	}
	fmt.Fprintf(tw, "counter keys\t%d\n", st.CounterKeys)
	t := st.Tail
	fmt.Fprintf(tw, "log tail\t%d lines, %d bytes, %d cut, %d rotations, %d truncations, %d lost files\n",
		t.Lines, t.Bytes, t.CutLines, t.Rotations, t.Truncations, t.LostFiles)
	if f := st.Fleet; f != nil {
		c := f.Counting
		fmt.Fprintf(tw, "fleet\tnode %s, %d live nodes, breaker %s, clock offset %.3fs\n", c.Node, c.LiveNodes, c.Breaker, c.ClockOffsetSeconds)
		for _, e := range c.Endpoints {
			fmt.Fprintf(tw, "  redis %s\tbreaker %s, %d slots\n", e.Name, e.Breaker, e.Slots)
		}
		loaded := "active set loaded"
		if !f.Sync.Loaded {
			loaded = "active set not loaded yet"
		}
		fmt.Fprintf(tw, "  mitigations\t%s, %d changes to publish\n", loaded, f.Sync.Pending)
		if len(f.PerNode) > 0 {
			fmt.Fprintf(tw, "  per node\t%s\n", strings.Join(f.PerNode, ", "))
		}
	}
	tw.Flush()
}

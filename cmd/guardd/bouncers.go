package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation/crowdsec"
)

func init() {
	register("bouncers", "register, list or delete CrowdSec bouncer API keys", runBouncers)
}

const bouncersUsage = `usage: guardd bouncers add [--config FILE] [--key-file FILE] NAME
       guardd bouncers list [--json] [--config FILE] [--key-file FILE]
       guardd bouncers delete [--config FILE] [--key-file FILE] NAME

Manages the API keys of CrowdSec bouncers polling guardd's CrowdSec-compatible
API. add prints the new key once on stdout (guardd keeps only its SHA-256):
put it in the bouncer's api_key. The key file is <state_dir>/` + crowdsec.KeyFileName + `
(state_dir from the configuration's mitigation.state_dir, default ` + config.DefaultStateDir + `);
a running daemon rereads it at the next poll. Each bouncer instance needs its
own key: the server remembers what it told each key.
`

func runBouncers(args []string, stdout, stderr io.Writer) int {
	verb, code, done := pickVerb(args, []string{"add", "list", "delete"}, bouncersUsage, stdout, stderr)
	if done {
		return code
	}
	fl := flag.NewFlagSet("bouncers "+verb, flag.ContinueOnError)
	configPath := fl.String("config", "", "read mitigation.state_dir from this configuration")
	keyFile := fl.String("key-file", "", "the key file (default <state_dir>/"+crowdsec.KeyFileName+")")
	asJSON := fl.Bool("json", false, `list: one JSON object per bouncer per line: {"name","created","key_sha256_prefix"}`)
	// Flags may come before or after NAME.
	pos, code, done := parseFlags(fl, strings.TrimRight(bouncersUsage, "\n"), args[1:], stdout, stderr)
	if done {
		return code
	}
	wantArgs := 1
	if verb == "list" {
		wantArgs = 0
	}
	if len(pos) != wantArgs {
		fmt.Fprint(stderr, bouncersUsage)
		return 2
	}
	path := *keyFile
	if path == "" {
		cfg, err := config.Load(*configPath)
		if err != nil {
			fmt.Fprintf(stderr, "guardd bouncers: %v\n", err)
			return 1
		}
		dir := cfg.Mitigation.StateDir
		if dir == "" {
			dir = config.DefaultStateDir
		}
		path = filepath.Join(dir, crowdsec.KeyFileName)
	}
	return bouncersVerb(verb, path, pos, *asJSON, stdout, stderr)
}

// bouncersVerb runs add, delete or list on the key file at path.
func bouncersVerb(verb, path string, pos []string, asJSON bool, stdout, stderr io.Writer) int {
	switch verb {
	case "add":
		key, err := crowdsec.AddBouncer(path, pos[0], time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "guardd bouncers add: %v\n", err)
			return 1
		}
		if err := ownLikeDir(path); err != nil {
			fmt.Fprintf(stderr, "guardd bouncers add: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, key)
		fmt.Fprintf(stderr, "API key for bouncer %q above: it is shown only now (%s keeps its hash).\n", pos[0], path)
	case "delete":
		ok, err := crowdsec.DeleteBouncer(path, pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "guardd bouncers delete: %v\n", err)
			return 1
		}
		if !ok {
			fmt.Fprintf(stderr, "guardd bouncers delete: no bouncer named %q in %s\n", pos[0], path)
			return 1
		}
		if err := ownLikeDir(path); err != nil {
			fmt.Fprintf(stderr, "guardd bouncers delete: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "deleted bouncer %q\n", pos[0])
	case "list":
		bs, err := crowdsec.ListBouncers(path)
		if err != nil {
			fmt.Fprintf(stderr, "guardd bouncers list: %v\n", err)
			return 1
		}
		if asJSON {
			for _, b := range bs {
				writeJSONLine(stdout, bouncerJSON{Name: b.Name, Created: b.Created.UTC().Format(time.RFC3339), KeySHA256Prefix: b.SHA256[:12]})
			}
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED\tKEY SHA-256")
		for _, b := range bs {
			fmt.Fprintf(tw, "%s\t%s\t%s…\n", b.Name, b.Created.Format(time.RFC3339), b.SHA256[:12])
		}
		tw.Flush()
	}
	return 0
}

// bouncerJSON is one line of guardd bouncers list --json: the key itself
// is never shown again, only the start of its hash.
type bouncerJSON struct {
	Name            string `json:"name"`
	Created         string `json:"created"`
	KeySHA256Prefix string `json:"key_sha256_prefix"`
}

// ownLikeDir gives the key file (and its lock) the owner of the directory
// it is in when root wrote it: `sudo guardd bouncers add` must leave a file
// the daemon, running as the guardd user, can read.
func ownLikeDir(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	st, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid == 0 {
		return nil
	}
	for _, p := range []string{path, path + ".lock"} {
		if err := os.Chown(p, int(sys.Uid), int(sys.Gid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("giving %s to the owner of its directory: %w", p, err)
		}
	}
	return nil
}

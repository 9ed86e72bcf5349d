package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/guardd/guardd/challenge"
	"github.com/guardd/guardd/config"
)

func init() {
	register("keys", "show or rotate the keys that sign challenge clearances", runKeys)
}

const keysUsage = `usage: guardd keys show [--json] [--config FILE] [--key-file FILE]
       guardd keys rotate [--json] [--config FILE] [--key-file FILE]

The challenge keys sign clearances and challenges (docs/rules.md, "Keys").
They live in challenge.key_file, default <mitigation.state_dir>/challenge.key.
show prints the keys' ids (never the keys), the signing key first. rotate
puts a new random key first and keeps the one that signed until now second,
so clearances it signed stay valid until they expire; restart guardd (and
copy the file to every node of a fleet first) to sign with the new key.
Rotate again after challenge.clearance_ttl to drop the old one.
`

// keysJSON is one line of guardd keys --json.
type keysJSON struct {
	File    string   `json:"file"`
	Signing string   `json:"signing"`
	Keys    []string `json:"keys"`
}

func runKeys(args []string, stdout, stderr io.Writer) int {
	verb, code, done := pickVerb(args, []string{"show", "rotate"}, keysUsage, stdout, stderr)
	if done {
		return code
	}
	fl := flag.NewFlagSet("keys "+verb, flag.ContinueOnError)
	configPath := fl.String("config", "", "read challenge.key_file and mitigation.state_dir from this configuration")
	keyFile := fl.String("key-file", "", "the key file (default: the configuration's challenge.key_file)")
	asJSON := fl.Bool("json", false, `print one JSON object: {"file","signing","keys"}`)
	pos, code, done := parseFlags(fl, strings.TrimRight(keysUsage, "\n"), args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "guardd keys %s: %v\n", verb, err)
		return 1
	}
	path := *keyFile
	if path == "" {
		cfg, err := config.Load(*configPath)
		if err != nil {
			return fail(err)
		}
		path = cfg.ChallengeKeyFile()
	}
	switch verb {
	case "show":
		// LoadKeyring makes a missing file; show only reads.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("%s does not exist yet: guardd run makes it on its first start, or guardd keys rotate", path))
		}
	case "rotate":
		if _, err := os.Stat(path); err == nil {
			if err := challenge.RotateKeyFile(path); err != nil {
				return fail(err)
			}
		}
	}
	kr, err := challenge.LoadKeyring(path) // rotate: makes the first key when none existed
	if err != nil {
		return fail(err)
	}
	if verb == "rotate" {
		if err := ownLikeDir(path); err != nil {
			return fail(err)
		}
	}
	res := keysJSON{File: path}
	for _, id := range kr.IDs() {
		res.Keys = append(res.Keys, fmt.Sprintf("%08x", id))
	}
	res.Signing = res.Keys[0]
	if *asJSON {
		writeJSONLine(stdout, res)
		return 0
	}
	fmt.Fprintf(stdout, "%s: %d key(s), signing with %s", path, len(res.Keys), res.Signing)
	if len(res.Keys) > 1 {
		fmt.Fprintf(stdout, ", still accepting %s", strings.Join(res.Keys[1:], ", "))
	}
	fmt.Fprintln(stdout)
	if verb == "rotate" {
		fmt.Fprintln(stderr, "Restart guardd to sign with the new key (copy the file to every node of a fleet first).")
	}
	return 0
}

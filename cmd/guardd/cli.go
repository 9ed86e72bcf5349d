package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// pickVerb returns args[0] when it is one of verbs. Otherwise it prints
// usage, to stdout with exit 0 for -h, --help or help, to stderr with exit
// 2 for anything else, and done is true.
func pickVerb(args, verbs []string, usage string, stdout, stderr io.Writer) (verb string, exit int, done bool) {
	if len(args) > 0 && slices.Contains(verbs, args[0]) {
		return args[0], 0, false
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return "", 0, true
	}
	fmt.Fprint(stderr, usage)
	return "", 2, true
}

// parseFlags parses fs's flags wherever they stand among args (Go's flag
// package stops at the first argument; `guardd decisions delete 7 --config X`
// must still read X) and returns the other arguments, in order. Everything
// after a "--" is an argument.
//
// With -h or --help it prints usage (synopsis, then the flags) to stdout and
// returns exit status 0 and done; on a bad flag it prints the error and usage
// to stderr and returns 2 and done. Callers do nothing before parsing, so -h
// never reads a configuration or a token.
func parseFlags(fs *flag.FlagSet, synopsis string, args []string, stdout, stderr io.Writer) (pos []string, exit int, done bool) {
	fs.Usage = func() {}
	fs.SetOutput(stderr)
	var tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, synopsis, stdout)
			return nil, 0, true
		}
		if err != nil {
			printUsage(fs, synopsis, stderr)
			return nil, 2, true
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), 0, false
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func printUsage(fs *flag.FlagSet, synopsis string, w io.Writer) {
	fmt.Fprintln(w, strings.TrimRight(synopsis, "\n"))
	var n int
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

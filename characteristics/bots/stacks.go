package bots

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
)

//go:embed tls_clients.txt
var tlsClientsTxt []byte

// Stacks maps JA4 fingerprints to the client software that produces them.
// It is immutable and safe for concurrent use.
type Stacks struct {
	m map[string]string // JA4_b + "_" + JA4_c -> "<kind>/<name>"
}

// Kinds of client stacks a table may name.
const (
	KindLibrary = "library" // an HTTP library or command-line tool: curl, Python, Go ...
	KindBrowser = "browser"
)

// ParseStacks reads a TLS client table: blank lines, # comments, and lines
// of three fields, `<ja4> <kind> <name>`, kind being library or browser and
// name a word. file names the source in errors, which carry its line.
func ParseStacks(r io.Reader, file string) (*Stacks, error) {
	s := &Stacks{m: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want three fields, <ja4> <kind> <name>; got %d", file, n, len(f))
		}
		key, ok := ja4Key(f[0])
		if !ok || len(f[0]) != 36 || f[0][10] != '_' {
			return nil, fmt.Errorf("%s:%d: %q is not a JA4 (want e.g. t13d1516h2_8daaf6152771_e5627efa2ab1)", file, n, f[0])
		}
		if f[1] != KindLibrary && f[1] != KindBrowser {
			return nil, fmt.Errorf("%s:%d: kind %q: accepted: %s, %s", file, n, f[1], KindLibrary, KindBrowser)
		}
		if strings.ContainsAny(f[2], "/\"\\") {
			return nil, fmt.Errorf("%s:%d: name %q: want a word without / or quotes", file, n, f[2])
		}
		v := f[1] + "/" + f[2]
		if prev, dup := s.m[key]; dup && prev != v {
			return nil, fmt.Errorf("%s:%d: %s is already %s", file, n, f[0], prev)
		}
		s.m[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
	}
	return s, nil
}

// ja4Key returns the JA4_b and JA4_c parts of a JA4 (b_c), which do not
// depend on SNI or ALPN.
func ja4Key(ja4 string) (string, bool) {
	i := strings.IndexByte(ja4, '_')
	if i < 0 || strings.IndexByte(ja4[i+1:], '_') < 0 {
		return "", false
	}
	return ja4[i+1:], true
}

// LoadStacks reads a table from a file; "" means the embedded one.
func LoadStacks(path string) (*Stacks, error) {
	if path == "" {
		return DefaultStacks(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bots: %w", err)
	}
	defer f.Close()
	return ParseStacks(f, path)
}

var defaultStacks = func() *Stacks {
	s, err := ParseStacks(bytes.NewReader(tlsClientsTxt), "tls_clients.txt")
	if err != nil {
		panic(err) // the embedded table is tested
	}
	return s
}()

// DefaultStacks returns the embedded table.
func DefaultStacks() *Stacks { return defaultStacks }

// Client returns "<kind>/<name>" of the stack that produces ja4, such as
// "library/curl", and whether the table knows it. It allocates nothing.
func (s *Stacks) Client(ja4 string) (string, bool) {
	if s == nil {
		return "", false
	}
	k, ok := ja4Key(ja4)
	if !ok {
		return "", false
	}
	v, ok := s.m[k]
	return v, ok
}

// Len returns the number of stacks in the table.
func (s *Stacks) Len() int { return len(s.m) }

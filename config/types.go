package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/guardd/guardd/mitigation"
)

// Prefix is a network, written as a CIDR or a single address (a /32 or
// /128). It is held masked.
type Prefix struct{ netip.Prefix }

// UnmarshalYAML parses a CIDR or an address.
func (p *Prefix) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, "want a CIDR or an address")
	}
	v, err := ParsePrefix(n.Value)
	if err != nil {
		return nodeError(n, fmt.Sprintf("%q: want a CIDR or an address", n.Value))
	}
	p.Prefix = v
	return nil
}

// MarshalYAML writes the CIDR.
func (p Prefix) MarshalYAML() (any, error) { return p.String(), nil }

// ParsePrefix parses a CIDR or an address.
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Prefixes unwraps ps.
func Prefixes(ps []Prefix) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = p.Prefix
	}
	return out
}

// Action is a mitigation action named in the config.
type Action struct{ mitigation.Action }

// UnmarshalYAML parses an action name.
func (a *Action) UnmarshalYAML(n *yaml.Node) error {
	v, err := mitigation.ParseAction(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return nodeError(n, fmt.Sprintf("%q: %v", n.Value, err))
	}
	a.Action = v
	return nil
}

// MarshalYAML writes the action's name.
func (a Action) MarshalYAML() (any, error) { return a.String(), nil }

// nodeError is a decoding error at n, in yaml's own form, so that it is
// collected with the others and located like them.
func nodeError(n *yaml.Node, msg string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %s", n.Line, n.Column, msg)}}
}

// FieldError is a bad value of one field, named by its dotted path.
type FieldError struct {
	Path string // e.g. "characteristics.trusted_proxies[1]"
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

func fieldErrorf(path, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^line (\d+): (?:column (\d+): )?`)

// wrap names the file, and the line of each error: yaml's own "line N:"
// becomes "file:N:" (with the field's path when it is known), a FieldError
// gets the line its path was set on.
func (c *Config) wrap(err error) error {
	file := c.File
	if file == "" {
		file = "config"
	}
	var ue *UnknownKeyError
	if errors.As(err, &ue) {
		return fmt.Errorf("config: %w", err)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		if l := c.lineOf(fe.Path); l > 0 {
			return fmt.Errorf("config: %s:%d: %w", file, l, err)
		}
		return fmt.Errorf("config: %s: %w", file, err)
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = c.locate(file, m)
		}
		return fmt.Errorf("config: %s", strings.Join(msgs, "; "))
	}
	return fmt.Errorf("config: %s", c.locate(file, strings.TrimPrefix(err.Error(), "yaml: ")))
}

// locate rewrites one of yaml's messages "line N: [column C: ]msg" as
// "file:N: [path: ]msg".
func (c *Config) locate(file, m string) string {
	sm := yamlLine.FindStringSubmatch(m)
	if sm == nil {
		return file + ": " + m
	}
	rest := plainTypeError(m[len(sm[0]):])
	if sm[2] != "" {
		if p, ok := c.pathAt(sm[1] + ":" + sm[2]); ok {
			rest = p + ": " + rest
		}
	} else if p := c.paths[sm[1]]; p != "" {
		rest = p + ": " + rest
	}
	return file + ":" + sm[1] + ": " + rest
}

// lineOf is the line of path, or of the nearest enclosing path set.
func (c *Config) lineOf(path string) int {
	for path != "" {
		if l := c.lines[path]; l > 0 {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

func (c *Config) pathAt(pos string) (string, bool) {
	p, ok := c.paths[pos]
	return p, ok
}

// index records the line of every key and sequence item under path in
// lines, and in paths the path of the value at each "line:column".
func index(n *yaml.Node, path string, lines map[string]int, paths map[string]string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			index(c, path, lines, paths)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			lines[p] = k.Line
			record(paths, v, p)
			index(v, p, lines, paths)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			lines[p] = c.Line
			record(paths, c, p)
			index(c, p, lines, paths)
		}
	}
}

// record notes that value node v is at path p: under "line:column", and
// under "line" when it is the only scalar on its line (yaml's own type
// errors give the line alone).
func record(paths map[string]string, v *yaml.Node, p string) {
	line := strconv.Itoa(v.Line)
	paths[line+":"+strconv.Itoa(v.Column)] = p
	if v.Kind != yaml.ScalarNode {
		return
	}
	if _, dup := paths[line]; dup {
		paths[line] = "" // several values on one line: which one is unknown
		return
	}
	paths[line] = p
}

// checkDurations rejects a negative time.Duration anywhere in c, naming its
// field: a negative interval or timeout is never what was meant, and
// silently replacing it with the default hides the mistake.
func checkDurations(c *Config) error {
	return walkDurations(reflect.ValueOf(c).Elem(), "")
}

var durationType = reflect.TypeFor[time.Duration]()

func walkDurations(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return walkDurations(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			p := path
			if opts != "inline" {
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				if p != "" {
					p += "."
				}
				p += name
			}
			if err := walkDurations(v.Field(i), p); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := walkDurations(v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Int64:
		if v.Type() == durationType && v.Int() < 0 {
			return fieldErrorf(path, "%s: want a positive duration (0 means the default)", time.Duration(v.Int()))
		}
	}
	return nil
}

// syntaxLine corrects the line of a YAML syntax error. yaml reports the line
// where the enclosing context began (often the key before the mistake); the
// shortest prefix of the file that fails with the same message ends on the
// line at fault.
func syntaxLine(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	sm := yamlLine.FindStringSubmatch(msg)
	if sm == nil {
		return err
	}
	want := msg[len(sm[0]):]
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(k int) bool {
		var n yaml.Node
		e := yaml.Unmarshal(bytes.Join(lines[:k], nil), &n)
		if e == nil {
			return false
		}
		m := strings.TrimPrefix(e.Error(), "yaml: ")
		if sm := yamlLine.FindStringSubmatch(m); sm != nil {
			m = m[len(sm[0]):]
		}
		return m == want
	}
	// Prefixes up to the culprit parse (or fail otherwise); from it on they
	// fail the same way.
	lo, hi := 1, len(lines)
	if !fails(hi) {
		return err
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return fmt.Errorf("line %d: %s", lo, want)
}

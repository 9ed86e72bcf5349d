package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkKeys walks the document against Config's fields and returns one
// error per key that names no field, in the operator's words: the dotted
// path, the file and line, and the nearest accepted key ("unknown key
// "decison" at guardd.yaml:3; did you mean "decision"?"). yaml's own
// KnownFields check stays behind it, but its message names Go types.
func checkKeys(root *yaml.Node, file string) error {
	var errs []error
	walkKeys(root, reflect.TypeFor[Config](), "", file, &errs)
	return errors.Join(errs...)
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func walkKeys(n *yaml.Node, t reflect.Type, path, file string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // it reads its own node
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkKeys(c, t, path, file, errs)
		}
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return // a type error, reported by the decoder
		}
		for i, c := range n.Content {
			walkKeys(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", file, errs)
		}
	case yaml.MappingNode:
		switch t.Kind() {
		case reflect.Map:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), file, errs)
			}
		case reflect.Struct:
			fields := yamlFields(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "<<" {
					continue // a merge key: its values are checked where they are defined
				}
				ft, ok := fields[k.Value]
				if !ok {
					*errs = append(*errs, unknownKey(k, path, file, fields))
					continue
				}
				walkKeys(v, ft, join(path, k.Value), file, errs)
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps each key t accepts to its field's type, following inline
// fields as yaml does.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					out[k] = v
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// UnknownKeyError is a key the configuration does not have.
type UnknownKeyError struct {
	File    string
	Line    int
	Path    string   // dotted, as the docs write it: "decision.shed_afterr"
	Suggest string   // the nearest accepted key's path, or ""
	Keys    []string // the keys accepted where it stands, sorted
}

func (e *UnknownKeyError) Error() string {
	msg := fmt.Sprintf("unknown key %q at %s:%d", e.Path, e.File, e.Line)
	if e.Suggest != "" {
		return msg + fmt.Sprintf("; did you mean %q?", e.Suggest)
	}
	return msg + "; accepted here: " + strings.Join(e.Keys, ", ")
}

func unknownKey(k *yaml.Node, path, file string, fields map[string]reflect.Type) error {
	e := &UnknownKeyError{File: file, Line: k.Line, Path: join(path, k.Value)}
	for name := range fields {
		e.Keys = append(e.Keys, name)
	}
	sort.Strings(e.Keys)
	best, bestD := "", 0
	for _, name := range e.Keys {
		d := editDistance(strings.ToLower(k.Value), name)
		if best == "" || d < bestD {
			best, bestD = name, d
		}
	}
	// A typo, not another word: at most a third of the key's letters, and
	// at least one, may differ.
	if best != "" && bestD <= max(1, len(k.Value)/3) {
		e.Suggest = join(path, best)
	} else if p := findKey(reflect.TypeFor[Config](), "", k.Value, 0); p != "" {
		e.Suggest = p // the right key in the wrong section
	}
	return e
}

// findKey is the path of the first field named key anywhere in t, breadth
// of a few levels, or "".
func findKey(t reflect.Type, path, key string, depth int) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 3 || reflect.PointerTo(t).Implements(unmarshalerType) {
		return ""
	}
	fields := yamlFields(t)
	if _, ok := fields[key]; ok && depth > 0 {
		return join(path, key)
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if p := findKey(fields[name], join(path, name), key, depth+1); p != "" {
			return p
		}
	}
	return ""
}

// editDistance is the Damerau–Levenshtein (optimal string alignment)
// distance between a and b: a swapped pair of letters is one edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

var yamlFieldMsg = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

var yamlTypeMsg = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")

// plainTypeError rewrites yaml's "cannot unmarshal !!str `abc` into int" as
// what the field wants, without Go's type names.
func plainTypeError(msg string) string {
	if sm := yamlFieldMsg.FindStringSubmatch(msg); sm != nil {
		return fmt.Sprintf("unknown key %q", sm[1]) // checkKeys missed it: a type that reads its own node
	}
	sm := yamlTypeMsg.FindStringSubmatch(msg)
	if sm == nil {
		return msg
	}
	tag, val, goType := sm[1], sm[2], sm[3]
	var want string
	switch {
	case goType == "time.Duration":
		want = "a duration such as 30s, 5m or 1h"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		want = "a whole number"
	case strings.HasPrefix(goType, "float"):
		want = "a number"
	case goType == "bool":
		want = "true or false"
	case goType == "string":
		want = "a string"
	case strings.HasPrefix(goType, "[]"):
		want = "a list"
	default:
		want = "a section of keys (key: value lines)"
	}
	got := fmt.Sprintf("%q", val)
	switch tag {
	case "map":
		got = "a section of keys"
	case "seq":
		got = "a list"
	}
	return got + ": want " + want
}

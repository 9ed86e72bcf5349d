package config

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"
)

// refRow is one key of the reference.
type refRow struct {
	key, typ, def, reload, doc string
}

// Reference writes docs/configuration.md's text: every key of Config, its
// type, its default and whether a reload applies it (from the reloaders'
// declarations, ReloadOf), with the field's doc comment. srcRoot is the
// module's root directory, where the comments are read from the Go source of
// each type's package. A key no reloader declares is an error naming it.
func Reference(srcRoot string, rs []Reloader) (string, error) {
	docs := map[string]map[string]string{} // package path -> "Type.Field" -> comment
	comment := func(t reflect.Type, field string) string {
		pkg := t.PkgPath()
		m, ok := docs[pkg]
		if !ok {
			m = map[string]string{}
			docs[pkg] = m
			rel := strings.TrimPrefix(pkg, "github.com/guardd/guardd")
			fset := token.NewFileSet()
			pkgs, err := parser.ParseDir(fset, filepath.Join(srcRoot, rel), nil, parser.ParseComments)
			if err == nil {
				for _, p := range pkgs {
					for _, f := range p.Files {
						ast.Inspect(f, func(n ast.Node) bool {
							ts, ok := n.(*ast.TypeSpec)
							if !ok {
								return true
							}
							st, ok := ts.Type.(*ast.StructType)
							if !ok {
								return true
							}
							for _, fl := range st.Fields.List {
								text := fl.Doc.Text()
								if text == "" {
									text = fl.Comment.Text()
								}
								for _, name := range fl.Names {
									m[ts.Name.Name+"."+name.Name] = strings.Join(strings.Fields(text), " ")
								}
							}
							return true
						})
					}
				}
			}
		}
		return m[t.Name()+"."+field]
	}
	var rows []refRow
	var walk func(t reflect.Type, def reflect.Value, prefix string)
	walk = func(t reflect.Type, def reflect.Value, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || tag[0] == "-" {
				continue
			}
			ft, dv := f.Type, reflect.Value{}
			if def.IsValid() {
				dv = def.Field(i)
			}
			if len(tag) > 1 && tag[1] == "inline" {
				walk(ft, dv, prefix)
				continue
			}
			key := prefix + tag[0]
			inner := ft
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
				if dv.IsValid() && !dv.IsNil() {
					dv = dv.Elem()
				} else {
					dv = reflect.Value{}
				}
			}
			if inner.Kind() == reflect.Struct && inner != reflect.TypeOf(time.Time{}) && !hasUnmarshaler(inner) {
				rows = append(rows, refRow{key: key, typ: "section", doc: comment(t, f.Name)})
				walk(inner, dv, key+".")
				continue
			}
			rows = append(rows, refRow{key: key, typ: typeName(ft), def: defaultOf(dv), reload: ReloadOf(rs, strings.ReplaceAll(key, "[]", "")), doc: comment(t, f.Name)})
			if el := ft; el.Kind() == reflect.Slice && el.Elem().Kind() == reflect.Struct && !hasUnmarshaler(el.Elem()) {
				walk(el.Elem(), reflect.Value{}, key+"[].")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), reflect.ValueOf(*Default()), "")
	var undeclared []string
	for i := range rows {
		r := &rows[i]
		if r.typ != "section" {
			if r.reload == "" {
				undeclared = append(undeclared, r.key)
			}
			continue
		}
		// A section says what its keys say when they agree.
		for _, k := range rows[i+1:] {
			if !strings.HasPrefix(k.key, r.key+".") && !strings.HasPrefix(k.key, r.key+"[].") {
				break
			}
			if k.typ == "section" {
				continue
			}
			if r.reload == "" {
				r.reload = k.reload
			} else if r.reload != k.reload {
				r.reload = "per key"
				break
			}
		}
	}
	if len(undeclared) > 0 {
		return "", fmt.Errorf("config: no reloader applies or declares restart-only: %s", strings.Join(undeclared, ", "))
	}
	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Generated from the Go types of package config and the daemon's
     reloaders by TestConfigReference
     (go test ./cmd/guardd -run TestConfigReference -update); do not edit. -->

Every key of ` + "`/etc/guardd/guardd.yaml`" + `, generated from the configuration's Go
types, so it cannot drift: a test fails when this file and the code differ.
The file is decoded strictly: an unknown key, nested ones too, is an error
naming its dotted path, file and line, and the nearest accepted key
(` + "`unknown key \"decison\" at guardd.yaml:3; did you mean \"decision\"?`" + `). A
key left out, or a section left empty (` + "`nftables:`" + ` alone), takes its
default; ` + "`guardd check`" + ` validates a file without starting anything.
"Reload" says whether ` + "`systemctl reload guardd`" + ` (SIGHUP, or a changed file)
applies a change, or whether it waits for a restart (logged, and counted in
` + "`guardd_config_restart_pending`" + `); each component declares what it applies
and what it reads at start, and this column is derived from those
declarations ("per key" on a section whose keys differ). A default of "—"
means the zero value, whose meaning the description gives. Durations are Go
durations (` + "`250ms`, `10m`" + `).

| key | type | default | reload | description |
|---|---|---|---|---|
`)
	for _, r := range rows {
		def := r.def
		if def == "" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		typ := r.typ
		if typ != "section" {
			typ = "`" + typ + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.key, typ, def, r.reload, strings.ReplaceAll(r.doc, "|", `\|`))
	}
	return b.String(), nil
}

// hasUnmarshaler: the type decodes itself from a scalar (a CIDR, an action).
func hasUnmarshaler(t reflect.Type) bool {
	_, ok := reflect.PointerTo(t).MethodByName("UnmarshalYAML")
	return ok
}

func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return "duration"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case t.Kind() == reflect.Struct && hasUnmarshaler(t):
		return strings.ToLower(t.Name())
	case t.Kind() == reflect.Struct:
		return "object"
	}
	name := t.Kind().String()
	if t.Name() != "" && t.PkgPath() != "" {
		name = strings.ToLower(t.Name())
	}
	return name
}

func defaultOf(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String()
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		keys := []string{}
		for i := range v.Len() {
			if v.Kind() == reflect.Slice {
				keys = append(keys, fmt.Sprint(v.Index(i)))
			}
		}
		sort.Strings(keys)
		return "[" + strings.Join(keys, ", ") + "]"
	}
	return fmt.Sprint(v.Interface())
}

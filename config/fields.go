package config

import (
	"reflect"
	"slices"
	"strings"
	"time"
)

// The configuration's keys by dotted path, as the file spells them and as
// docs/configuration.md lists them: "fleet.redis.addresses". A leaf is a
// key holding a value (a scalar, a list or a map, compared whole); a
// section is a key holding keys. Reloaders declare the keys they apply or
// need a restart for by path, a section standing for every key under it.

// Fields lists every leaf key of Config, in the order of the types.
func Fields() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		forFields(t, func(i int, key string, inline bool) {
			ft := t.Field(i).Type
			if inline {
				walk(ft, prefix)
				return
			}
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if isSection(ft) {
				walk(ft, prefix+key+".")
				return
			}
			out = append(out, prefix+key)
		})
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}

// IsKey reports whether path names a leaf or a section of Config.
func IsKey(path string) bool {
	for _, f := range Fields() {
		if f == path || strings.HasPrefix(f, path+".") {
			return true
		}
	}
	return false
}

// Covers reports whether one of paths is key or a section holding it.
func Covers(paths []string, key string) bool {
	return slices.ContainsFunc(paths, func(p string) bool { return covers(p, key) })
}

func covers(p, key string) bool { return key == p || strings.HasPrefix(key, p+".") }

// Diff lists the keys at or under path whose values differ between a and b:
// the leaves that changed, or a section that is present in one and absent
// (a nil pointer, such as fleet) in the other.
func Diff(a, b *Config, path string) []string {
	va, ta := lookup(reflect.ValueOf(a).Elem(), path)
	vb, _ := lookup(reflect.ValueOf(b).Elem(), path)
	if ta == nil {
		return nil
	}
	var out []string
	var walk func(va, vb reflect.Value, t reflect.Type, path string)
	walk = func(va, vb reflect.Value, t reflect.Type, path string) {
		if t.Kind() == reflect.Pointer && isSection(t.Elem()) {
			na, nb := !va.IsValid() || va.IsNil(), !vb.IsValid() || vb.IsNil()
			switch {
			case na && nb:
				return
			case na != nb:
				out = append(out, path)
				return
			}
			va, vb, t = va.Elem(), vb.Elem(), t.Elem()
		}
		if !isSection(t) {
			if !va.IsValid() || !vb.IsValid() {
				if va.IsValid() != vb.IsValid() {
					out = append(out, path)
				}
				return
			}
			if !reflect.DeepEqual(va.Interface(), vb.Interface()) {
				out = append(out, path)
			}
			return
		}
		var sub func(t reflect.Type, va, vb reflect.Value)
		sub = func(t reflect.Type, va, vb reflect.Value) {
			forFields(t, func(i int, key string, inline bool) {
				fa, fb := va.Field(i), vb.Field(i)
				if inline {
					sub(t.Field(i).Type, fa, fb)
					return
				}
				p := key
				if path != "" {
					p = path + "." + key
				}
				walk(fa, fb, t.Field(i).Type, p)
			})
		}
		sub(t, va, vb)
	}
	walk(va, vb, ta, path)
	return out
}

// revert sets the value at path in c to old's, copying every section c
// reaches through a pointer on the way, so that nothing c shares with the
// configuration it was copied from changes.
func revert(c, old *Config, path string) {
	ov, _ := lookup(reflect.ValueOf(old).Elem(), path)
	v := reflect.ValueOf(c).Elem()
	parts := strings.Split(path, ".")
	for n, part := range parts {
		f, ok := field(v, part)
		if !ok {
			return
		}
		if n == len(parts)-1 {
			if ov.IsValid() {
				f.Set(ov)
			} else {
				f.Set(reflect.Zero(f.Type()))
			}
			return
		}
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				// The section is absent here: an absent section is
				// reverted as a whole, by its own path.
				return
			}
			cp := reflect.New(f.Type().Elem())
			cp.Elem().Set(f.Elem())
			f.Set(cp)
			f = cp.Elem()
		}
		v = f
	}
}

// lookup returns the value at path under v and its type; the value is
// invalid where a pointer on the way is nil, the type nil when path is no
// key.
func lookup(v reflect.Value, path string) (reflect.Value, reflect.Type) {
	t := v.Type()
	if path == "" {
		return v, t
	}
	for part := range strings.SplitSeq(path, ".") {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
			if v.IsValid() {
				if v.IsNil() {
					v = reflect.Value{}
				} else {
					v = v.Elem()
				}
			}
		}
		if !isSection(t) {
			return reflect.Value{}, nil
		}
		i, ok := fieldIndex(t, part)
		if !ok {
			return reflect.Value{}, nil
		}
		if v.IsValid() {
			v = v.FieldByIndex(i)
		}
		t = t.FieldByIndex(i).Type
	}
	return v, t
}

// field is the addressable field of struct v keyed part.
func field(v reflect.Value, part string) (reflect.Value, bool) {
	i, ok := fieldIndex(v.Type(), part)
	if !ok {
		return reflect.Value{}, false
	}
	return v.FieldByIndex(i), true
}

// fieldIndex finds the field keyed part in struct t, looking into inline
// structs.
func fieldIndex(t reflect.Type, part string) ([]int, bool) {
	var found []int
	forFields(t, func(i int, key string, inline bool) {
		if found != nil {
			return
		}
		if inline {
			if sub, ok := fieldIndex(t.Field(i).Type, part); ok {
				found = append([]int{i}, sub...)
			}
			return
		}
		if key == part {
			found = []int{i}
		}
	})
	return found, found != nil
}

// forFields calls f with each exported field of struct t that the file
// has a key for.
func forFields(t reflect.Type, f func(i int, key string, inline bool)) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" {
			f(i, "", true)
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		f(i, name, false)
	}
}

// isSection reports whether a value of t is a set of keys, not a value.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]() && !hasUnmarshaler(t)
}

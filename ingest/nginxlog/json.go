package nginxlog

import (
	"bytes"

	"github.com/guardd/guardd/characteristics"
)

// maxJSONDepth bounds the nesting of values ParseJSON skips.
const maxJSONDepth = 64

// ParseJSON resets e and fills it from line, one JSON object whose keys are
// nginx variable names with or without '$' — {"remote_addr":"192.0.2.1",
// "status":200,...} — as written by a log_format with escape=json. Values may
// be strings, numbers, true, false or null; null, "" and "-" mean absent;
// nested objects and arrays are skipped. Keys map onto e as Format.Parse maps
// variables.
//
// Like Parse it rewrites line in place (unescaping strings, lower-casing keys,
// turning http_x_y into x-y), e's strings alias line, and it allocates nothing
// once e's slices have grown. A line that is not such an object, or a value
// that does not fit its key, gives a *FieldError.
func ParseJSON(line []byte, e *characteristics.Event) error {
	e.Reset()
	e.Source = characteristics.SourceNginxLog
	p := jsonScanner{b: line}
	p.space()
	if !p.byte('{') {
		return p.fail("", "'{' starting a JSON object")
	}
	var st state
	var tmp variable
	p.space()
	if p.byte('}') {
		return p.end(e, &st)
	}
	for {
		p.space()
		kpos := p.i
		key, ok := p.str()
		if !ok {
			return p.fail("", "a quoted key")
		}
		p.space()
		if !p.byte(':') {
			return p.fail("", "':' after a key")
		}
		p.space()
		vpos := p.i
		val, present, ok := p.value()
		if !ok {
			return p.fail(str(key), "a JSON value")
		}
		if present {
			if len(key) > 0 && key[0] == '$' {
				key = key[1:]
			}
			if len(key) == 0 {
				return fieldError("", kpos, "a variable name as key", line[kpos:])
			}
			v := &tmp
			jsonVariable(key, v)
			switch {
			case !absent(val):
				if err := applyValue(v, val, vpos, e, &st); err != nil {
					return err
				}
			case v.kind == kRequest:
				e.Vars = append(e.Vars, characteristics.Field{Name: v.name, Value: str(val)})
			}
		}
		p.space()
		if p.byte('}') {
			return p.end(e, &st)
		}
		if !p.byte(',') {
			return p.fail("", "',' or '}' after a value")
		}
	}
}

// jsonVariable classifies a key, rewriting it in place: lower case, and the
// header name of http_x_y as x-y. It fills v.
func jsonVariable(key []byte, v *variable) {
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			key[i] = c + 'a' - 'A'
		}
	}
	name := str(key)
	k, also, rank, off := classify(name)
	v.name, v.kind, v.also, v.rank, v.key = name, k, also, rank, name
	switch k {
	case kHeader:
		h := key[off:]
		for i, c := range h {
			if c == '_' {
				h[i] = '-'
			}
		}
		v.key = str(h) // name, aliasing key, now reads http_x-y

	case kCookie:
		v.key = name[off:]
	}
}

type jsonScanner struct {
	b []byte
	i int
}

func (p *jsonScanner) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonScanner) fail(name, want string) error {
	return fieldError(name, p.i, want, p.b[p.i:])
}

func (p *jsonScanner) end(e *characteristics.Event, st *state) error {
	p.space()
	if p.i != len(p.b) {
		return p.fail("", "end of line after the JSON object")
	}
	st.finish(e)
	return nil
}

// str scans a string at p.i and returns its unescaped bytes.
func (p *jsonScanner) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for {
		k := bytes.IndexByte(p.b[p.i:], '"')
		if k < 0 {
			p.i = len(p.b)
			return nil, false
		}
		end := p.i + k
		p.i = end + 1
		if !escaped(p.b[start:end]) {
			s := p.b[start:end]
			if bytes.IndexByte(s, '\\') >= 0 {
				s = unescapeJSON(s)
			}
			return s, true
		}
	}
}

// value scans a value. present is false for null and for skipped objects and
// arrays.
func (p *jsonScanner) value() (val []byte, present, ok bool) {
	if p.i >= len(p.b) {
		return nil, false, false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		s, ok := p.str()
		return s, ok, ok
	case c == '{' || c == '[':
		return nil, false, p.skip()
	case c == 'n':
		return nil, false, p.word("null")
	case c == 't' || c == 'f':
		start := p.i
		if !p.word("true") && !p.word("false") {
			return nil, false, false
		}
		return p.b[start:p.i], true, true
	case c == '-' || '0' <= c && c <= '9':
		start := p.i
		for p.i < len(p.b) {
			c := p.b[p.i]
			if !('0' <= c && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
				break
			}
			p.i++
		}
		return p.b[start:p.i], true, true
	}
	return nil, false, false
}

func (p *jsonScanner) word(w string) bool {
	if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}

// skip passes over a nested object or array without looking inside values.
func (p *jsonScanner) skip() bool {
	depth := 0
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '{', '[':
			depth++
			if depth > maxJSONDepth {
				return false
			}
		case '}', ']':
			depth--
			if depth == 0 {
				p.i++
				return true
			}
		case '"':
			if _, ok := p.str(); !ok {
				return false
			}
			continue
		}
		p.i++
	}
	return false
}

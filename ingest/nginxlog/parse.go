package nginxlog

import (
	"bytes"
	"sync"
	"time"
	"unsafe"

	"github.com/guardd/guardd/characteristics"
)

// splitBudget bounds the alternative splits tried for one line, so that a line
// crafted to defeat the splitter costs a bounded number of scans.
const splitBudget = 64

// span is where a variable's value lies in a line.
type span struct{ start, end int32 }

// spanPool holds span arrays for formats with more variables than Parse
// keeps on its stack.
var spanPool = sync.Pool{New: func() any { return new([maxVariables]span) }}

// Parse resets e and fills it from line, a log line in the format f without
// its newline. e.Source is set to characteristics.SourceNginxLog.
//
// Parse undoes nginx's escaping in place, inside line, and e's strings alias
// line: they are valid while line is. It allocates nothing once e's slices
// have grown. A line that does not fit the format gives a *FieldError.
func (f *Format) Parse(line []byte, e *characteristics.Event) error {
	return f.ParseCache(line, e, nil)
}

// ParseCache is Parse remembering in c (nil: nothing), which belongs to the
// calling goroutine, what the next lines are likely to repeat.
func (f *Format) ParseCache(line []byte, e *characteristics.Event, c *Cache) error {
	line = f.trimEnd(line)
	if f.combined && len(line) <= 1<<30 && f.parseCombined(line, e, c) {
		return nil
	}
	return f.parse(line, e)
}

// trimEnd drops the spaces, tabs and carriage returns that end line when the
// format ends in a literal other than those ('"', ']', '}'): published logs
// often carry a space after the closing quote, or a CR from a copy through
// another system, and a person reading the line does not see them. A format
// that ends in a variable keeps them, as part of its value.
func (f *Format) trimEnd(line []byte) []byte {
	if len(f.vars) == 0 {
		return line
	}
	if t := f.vars[len(f.vars)-1].after; t == "" || isBlank(t[len(t)-1]) {
		return line
	}
	n := len(line)
	for n > 0 && isBlank(line[n-1]) {
		n--
	}
	return line[:n]
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// parse is Parse's general path, for any format and any line.
func (f *Format) parse(line []byte, e *characteristics.Event) error {
	line = f.trimEnd(line) // again when called by ParseCache: a byte's test
	e.Reset()
	e.Source = characteristics.SourceNginxLog
	if len(line) > 1<<30 {
		return fieldError("", 0, "a line under 1 GiB", nil)
	}
	var buf [32]span // zeroing more would cost the common formats
	spans := buf[:]
	if len(f.vars) > len(buf) {
		p := spanPool.Get().(*[maxVariables]span)
		defer spanPool.Put(p)
		spans = p[:]
	}
	if !hasLiteral(line, f.lead) {
		return fieldError("", 0, "literal "+quote(f.lead)+" at the start", line)
	}
	// Fast path: split at the first occurrence of each literal, then store
	// the typed values, which parse without touching line. If one of them
	// does not parse, the split may be wrong (a value held the literal that
	// follows it) and nothing is lost by trying again.
	var st state
	if f.splitFirst(line, spans) {
		err := f.applyAll(line, spans, true, e, &st)
		if err == nil {
			return f.applyAll(line, spans, false, e, &st)
		}
		if !f.shaped {
			return err
		}
		e.Reset()
		e.Source = characteristics.SourceNginxLog
		st = state{}
	}
	budget := splitBudget
	if !f.split(line, len(f.lead), 0, spans, &budget) {
		// No split fits the shapes of the values. Split greedily to report the
		// first literal that is missing, or else the value that is wrong.
		if err := f.splitGreedy(line, spans); err != nil {
			return err
		}
	}
	if err := f.applyAll(line, spans, true, e, &st); err != nil {
		return err
	}
	return f.applyAll(line, spans, false, e, &st)
}

// split finds the spans of variables i and after, the value of variable i
// starting at pos. Each value ends at the first occurrence of the literal that
// follows it where the value fits its shape and the rest of the line splits;
// the last value ends where the trailing literal ends the line.
func (f *Format) split(line []byte, pos, i int, spans []span, budget *int) bool {
	v := &f.vars[i]
	if i == len(f.vars)-1 {
		end := len(line) - len(v.after)
		if end < pos || !hasLiteral(line[end:], v.after) {
			return false
		}
		if v.shape.misfit(line[pos:end]) >= 0 {
			return false
		}
		spans[i] = span{int32(pos), int32(end)}
		return true
	}
	// A value with a shape ends at its first misfit byte at the latest, so
	// the search for its literal stops there: a line crafted with many false
	// literals costs scans as long as the typed field, not the line.
	scope := line
	if m := v.shape.misfit(line[pos:]); m >= 0 {
		scope = line[:min(len(line), pos+m+len(v.after))]
	}
	for from := pos; ; {
		j := indexLiteral(scope, from, v.after, f.escape != EscapeNone)
		if j < 0 {
			return false
		}
		if v.shape.misfit(line[pos:j]) >= 0 {
			// A later end would hold the same misfit byte.
			return false
		}
		spans[i] = span{int32(pos), int32(j)}
		if f.split(line, j+len(v.after), i+1, spans, budget) {
			return true
		}
		*budget--
		if *budget <= 0 {
			return false
		}
		from = j + 1
	}
}

// splitFirst is the fast path of split: each value ends at the first
// occurrence of the literal that follows it, whatever its shape.
func (f *Format) splitFirst(line []byte, spans []span) bool {
	pos := len(f.lead)
	json := f.escape != EscapeNone
	last := len(f.vars) - 1
	for i := range last {
		v := &f.vars[i]
		j := indexLiteral(line, pos, v.after, json)
		if j < 0 {
			return false
		}
		spans[i] = span{int32(pos), int32(j)}
		pos = j + len(v.after)
	}
	v := &f.vars[last]
	end := len(line) - len(v.after)
	if end < pos || !hasLiteral(line[end:], v.after) {
		return false
	}
	spans[last] = span{int32(pos), int32(end)}
	return true
}

// splitGreedy splits at the first occurrence of each literal, ignoring shapes,
// and reports a missing literal.
func (f *Format) splitGreedy(line []byte, spans []span) error {
	pos := len(f.lead)
	for i := range f.vars {
		v := &f.vars[i]
		if i == len(f.vars)-1 {
			end := len(line) - len(v.after)
			if end < pos || string(line[end:]) != v.after {
				return fieldError(v.name, pos, "a value ended by "+quote(v.after)+" at the end of the line", line[pos:])
			}
			spans[i] = span{int32(pos), int32(end)}
			break
		}
		j := indexLiteral(line, pos, v.after, f.escape != EscapeNone)
		if j < 0 {
			return fieldError(v.name, pos, "a value ended by "+quote(v.after), line[pos:])
		}
		spans[i] = span{int32(pos), int32(j)}
		pos = j + len(v.after)
	}
	return nil
}

// indexLiteral returns the index of the first occurrence of lit in line at or
// after from, or -1. With json set, a '"' that a backslash escapes does not
// start lit: JSON's \", and Apache's, which escape=default reads too (nginx
// itself writes a backslash as \x5C there, so its lines hold no \").
func indexLiteral(line []byte, from int, lit string, json bool) int {
	for from <= len(line) {
		k := bytes.IndexByte(line[from:], lit[0])
		if k < 0 {
			return -1
		}
		j := from + k
		if hasLiteral(line[j:], lit) && !(json && lit[0] == '"' && escaped(line[:j])) {
			return j
		}
		from = j + 1
	}
	return -1
}

// hasLiteral reports whether b starts with lit; literals are short, so a loop
// beats a call to memequal.
func hasLiteral(b []byte, lit string) bool {
	if len(b) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if b[i] != lit[i] {
			return false
		}
	}
	return true
}

// escaped reports whether b ends in an odd number of backslashes.
func escaped(b []byte) bool {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func quote(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '\'')
	b = append(b, s...)
	return string(append(b, '\''))
}

// absent reports whether a value means "not set": nginx logs "-", or "" with
// escape=json.
func absent(val []byte) bool { return len(val) == 0 || len(val) == 1 && val[0] == '-' }

// str returns a string that aliases b.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// state is what Parse remembers across the variables of one line.
type state struct {
	hostRank, bytesRank, ja3Rank, timeRank uint8
	uri                                    string
}

// setTime keeps the most precise time of a line: $msec, then $time_iso8601,
// then $time_local.
func (st *state) setTime(e *characteristics.Event, t time.Time, rank uint8) {
	if rank >= st.timeRank {
		e.Time = t
		st.timeRank = rank
	}
}

func (st *state) finish(e *characteristics.Event) {
	if e.Path == "" && st.uri != "" {
		e.Path = st.uri
	}
}

// applyAll stores in e the values of the typed variables (numbers, times,
// addresses), which are never escaped, or of the others, which it unescapes in
// place. The untyped pass comes last and finishes e.
func (f *Format) applyAll(line []byte, spans []span, typed bool, e *characteristics.Event, st *state) error {
	last := len(f.vars) - 1
	for i := range f.vars {
		v := &f.vars[i]
		if (v.shape != nil) != typed {
			continue
		}
		sp := spans[i]
		val := line[sp.start:sp.end]
		if absent(val) {
			if v.kind == kRequest {
				e.Vars = append(e.Vars, characteristics.Field{Name: v.name, Value: str(val)})
			}
			continue
		}
		if !typed {
			switch f.escape {
			case EscapeDefault:
				if i == last && bytes.IndexByte(val, '"') >= 0 && !jsonQuotesEscaped(val) {
					return fieldError(v.name, int(sp.start), "no raw '\"' with escape=default (a line with more fields than the format?)", val)
				}
				val = unescapeDefault(val)
			case EscapeJSON:
				if i == last && bytes.IndexByte(val, '"') >= 0 && !jsonQuotesEscaped(val) {
					return fieldError(v.name, int(sp.start), "no raw '\"' with escape=json (a line with more fields than the format?)", val)
				}
				val = unescapeJSON(val)
			}
		}
		if err := applyValue(v, val, int(sp.start), e, st); err != nil {
			return err
		}
	}
	if !typed {
		st.finish(e)
	}
	return nil
}

// applyValue stores an unescaped value in e.
func applyValue(v *variable, val []byte, pos int, e *characteristics.Event, st *state) error {
	s := str(val)
	switch v.kind {
	case kVar:
		e.Vars = append(e.Vars, characteristics.Field{Name: v.key, Value: s})
	case kRemoteAddr:
		a, ok := parseAddr(val)
		if !ok {
			if len(val) >= 5 && s[:5] == "unix:" {
				e.Vars = append(e.Vars, characteristics.Field{Name: v.name, Value: s})
				return nil
			}
			return fieldError(v.name, pos, "an IPv4 or IPv6 address", val)
		}
		e.IP = a.Unmap()
	case kRemotePort:
		n, ok := parseUint(val)
		if !ok || n > 65535 {
			return fieldError(v.name, pos, "a port number", val)
		}
		e.Port = uint16(n)
	case kTimeLocal:
		t, ok := parseTimeLocal(val)
		if !ok {
			return fieldError(v.name, pos, "a time like 10/Oct/2000:13:55:36 -0700", val)
		}
		st.setTime(e, t, v.rank)
	case kTimeISO:
		t, ok := parseTimeISO(val)
		if !ok {
			return fieldError(v.name, pos, "a time like 2000-10-10T13:55:36-07:00", val)
		}
		st.setTime(e, t, v.rank)
	case kMsec:
		t, ok := parseMsec(val)
		if !ok {
			return fieldError(v.name, pos, "seconds since the epoch like 1700000000.123", val)
		}
		st.setTime(e, t, v.rank)
	case kRequest:
		if !parseRequest(s, e) {
			e.Vars = append(e.Vars, characteristics.Field{Name: v.name, Value: s})
		}
	case kMethod:
		e.Method = s
	case kRequestURI:
		if e.Path == "" {
			e.Path, e.Query = splitTarget(s)
		}
	case kURI:
		st.uri = s
	case kArgs:
		if e.Query == "" {
			e.Query = s
		}
	case kProtocol:
		if e.Protocol == "" {
			e.Protocol = s
		}
	case kStatus:
		n, ok := parseUint(val)
		if !ok || n > 999 {
			return fieldError(v.name, pos, "an HTTP status code", val)
		}
		e.Status = int(n)
	case kBytesSent:
		n, ok := parseUint(val)
		if !ok || n > 1<<62 {
			return fieldError(v.name, pos, "a byte count", val)
		}
		if v.rank >= st.bytesRank {
			e.BytesSent = int64(n)
			st.bytesRank = v.rank
		}
	case kRequestTime:
		x, ok := parseSeconds(val)
		if !ok {
			return fieldError(v.name, pos, "seconds like 0.123", val)
		}
		e.RequestTime = x
	case kHost:
		if v.rank >= st.hostRank {
			e.Host = s
			st.hostRank = v.rank
		}
	case kHeader:
		e.Headers = append(e.Headers, characteristics.Field{Name: v.key, Value: s})
		switch v.also {
		case kReferer:
			e.Referer = s
		case kUserAgent:
			e.UserAgent = s
		case kHost:
			if v.rank >= st.hostRank {
				e.Host = s
				st.hostRank = v.rank
			}
		case kCookieHeader:
			parseCookies(s, e)
		}
	case kCookie:
		e.Cookies = append(e.Cookies, characteristics.Field{Name: v.key, Value: s})
	case kSNI:
		e.TLS.SNI = s
	case kALPN:
		e.TLS.ALPN = s
	case kJA3:
		if v.rank >= st.ja3Rank {
			e.TLS.JA3 = s
			st.ja3Rank = v.rank
		}
	case kJA4:
		e.TLS.JA4 = s
	}
	return nil
}

package nginxlog

import (
	"fmt"
	"strings"
)

// Combined is nginx's built-in "combined" log format, byte for byte.
const Combined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`

// maxVariables caps the variables of one format; nginx formats seldom pass 40.
const maxVariables = 256

// Escape is how nginx escaped the values of a format (log_format escape=).
type Escape uint8

// Escapes of log_format.
const (
	EscapeDefault Escape = iota // '"', '\' and bytes < 0x20 or >= 0x7f as \xHH
	EscapeJSON                  // JSON string escapes
	EscapeNone                  // raw bytes
)

func (x Escape) String() string {
	switch x {
	case EscapeJSON:
		return "json"
	case EscapeNone:
		return "none"
	}
	return "default"
}

// kind says where a variable's value goes in the Event.
type kind uint8

const (
	kVar         kind = iota // Vars by name
	kRemoteAddr              // IP
	kRemotePort              // Port
	kTimeLocal               // Time
	kTimeISO                 // Time
	kMsec                    // Time
	kRequest                 // Method, Path, Query, Protocol
	kMethod                  // Method
	kRequestURI              // Path, Query
	kURI                     // Path when nothing else set it
	kArgs                    // Query
	kProtocol                // Protocol
	kStatus                  // Status
	kBytesSent               // BytesSent
	kRequestTime             // RequestTime
	kHost                    // Host, by rank
	kHeader                  // Headers, plus the field named by also
	kCookie                  // Cookies
	kSNI                     // TLS.SNI
	kALPN                    // TLS.ALPN
	kJA3                     // TLS.JA3, by rank
	kJA4                     // TLS.JA4

	// Only as variable.also, for headers that also fill a field.
	kReferer
	kUserAgent
	kCookieHeader
)

// variable is one compiled $name of a format.
type variable struct {
	name  string // nginx name, lower case, without '$'
	kind  kind
	also  kind   // for kHeader: kReferer, kUserAgent, kHost, kCookieHeader or kVar (nothing)
	rank  uint8  // for kHost, kBytesSent, kJA3 and times: a higher rank wins
	key   string // header name, cookie name or Vars name
	shape *shape // bytes the value may hold, nil for any
	after string // the literal that follows, "" at the end of the format
}

// Format is a compiled nginx log_format. It is immutable and safe for
// concurrent use.
type Format struct {
	name   string // log_format name, "" for a bare format string
	text   string // the format string after concatenation
	escape Escape
	lead   string // literal before the first variable
	vars   []variable
	shaped bool // some variable has a shape, so a failed split is worth retrying
	// combined: the format is Combined with escape=default, which Parse
	// tries first with parseCombined.
	combined bool
}

// Compile compiles an nginx log format. format is one of:
//
//   - the name "combined", nginx's built-in format;
//   - a bare format string, as nginx would see it after unquoting:
//     `$remote_addr - $remote_user [$time_local] "$request" ...`;
//   - a whole log_format directive pasted from nginx.conf, possibly over
//     several lines with several quoted strings, which nginx concatenates:
//     log_format main escape=json '{"ip":"$remote_addr",' '"port":"$remote_port"}';
//
// Errors name the offending variable or byte position.
func Compile(format string) (*Format, error) {
	s := strings.TrimSpace(format)
	if s == "combined" {
		return compileText("combined", Combined, EscapeDefault)
	}
	if rest, ok := strings.CutPrefix(s, "log_format"); ok && rest != "" && isSpace(rest[0]) {
		return compileDirective(rest)
	}
	if s == "" {
		return nil, fmt.Errorf("nginxlog: empty log format")
	}
	// Keep spaces, which may be part of the format, but not the line ends a
	// YAML block scalar or a file adds.
	return compileText("", strings.Trim(format, "\r\n"), EscapeDefault)
}

// CompileEscape compiles a bare format string whose values nginx escaped with
// esc, as if written `log_format name escape=<esc> 'text';`.
func CompileEscape(text string, esc Escape) (*Format, error) {
	if esc > EscapeNone {
		return nil, fmt.Errorf("nginxlog: unknown escape %d", esc)
	}
	return compileText("", text, esc)
}

// MustCompile is Compile for formats fixed in the program; it panics on error.
func MustCompile(format string) *Format {
	f, err := Compile(format)
	if err != nil {
		panic(err)
	}
	return f
}

// Name returns the log_format name, or "" for a bare format string.
func (f *Format) Name() string { return f.name }

// String returns the format string, after nginx's concatenation of quoted parts.
func (f *Format) String() string { return f.text }

// Escape returns how the format's values are escaped.
func (f *Format) Escape() Escape { return f.escape }

// Variables returns the names of the format's variables, in order, without '$'.
func (f *Format) Variables() []string {
	out := make([]string, len(f.vars))
	for i := range f.vars {
		out[i] = f.vars[i].name
	}
	return out
}

// compileDirective compiles the arguments of a log_format directive: a name, an
// optional escape= and one or more strings, ended by ';'.
func compileDirective(s string) (*Format, error) {
	args, err := confTokens(s)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("nginxlog: log_format: want a name and a format string")
	}
	name := args[0]
	args = args[1:]
	esc := EscapeDefault
	if len(args) > 0 {
		if v, ok := strings.CutPrefix(args[0], "escape="); ok {
			switch v {
			case "default":
			case "json":
				esc = EscapeJSON
			case "none":
				esc = EscapeNone
			default:
				return nil, fmt.Errorf("nginxlog: log_format %s: unknown escape %q; want default, json or none", name, v)
			}
			args = args[1:]
		}
	}
	if len(args) == 0 {
		if name == "combined" {
			return compileText(name, Combined, esc)
		}
		return nil, fmt.Errorf("nginxlog: log_format %s: no format string", name)
	}
	return compileText(name, strings.Join(args, ""), esc)
}

// confTokens splits the rest of an nginx directive into its arguments, as
// nginx's configuration reader does: words separated by white space, quoted
// strings with \" \' \\ \n \r \t escapes, '#' comments, ended by ';',
// which must be there: a paste cut short would otherwise compile to a shorter
// format. Text after the ';' is ignored.
func confTokens(s string) ([]string, error) {
	var args []string
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == ';':
			// The end of the directive. What follows (the next lines of a
			// grep -A, an access_log directive) is not ours to read.
			return args, nil
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					switch s[j+1] {
					case '"', '\'', '\\':
						b.WriteByte(s[j+1])
						j++
						continue
					case 'n':
						b.WriteByte('\n')
						j++
						continue
					case 'r':
						b.WriteByte('\r')
						j++
						continue
					case 't':
						b.WriteByte('\t')
						j++
						continue
					}
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("nginxlog: log_format: unterminated %c-quoted string starting %q", c, clip(s[i:]))
			}
			args = append(args, b.String())
			i = j + 1
		default:
			j := i
			for j < len(s) && !isSpace(s[j]) && s[j] != ';' {
				j++
			}
			args = append(args, s[i:j])
			i = j
		}
	}
	return nil, fmt.Errorf("nginxlog: log_format: no ';' at the end, so the directive may be cut short (grep -A shows a fixed number of lines)")
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// compileText compiles a format string: literal text and $name or ${name}.
func compileText(name, text string, esc Escape) (*Format, error) {
	f := &Format{name: name, text: text, escape: esc}
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		return nil, fmt.Errorf("nginxlog: log format byte %d: a line break in the format; nginx would write each entry over several lines, and guardd reads one line per entry", i)
	}
	var lit strings.Builder
	lead := true
	for i := 0; i < len(text); {
		c := text[i]
		if c != '$' {
			lit.WriteByte(c)
			i++
			continue
		}
		start := i
		var vname string
		if i+1 < len(text) && text[i+1] == '{' {
			end := strings.IndexByte(text[i+2:], '}')
			if end < 0 {
				return nil, fmt.Errorf("nginxlog: log format byte %d: unterminated ${ in %q", start, clip(text[start:]))
			}
			vname = text[i+2 : i+2+end]
			i += end + 3
		} else {
			j := i + 1
			for j < len(text) && isNameByte(text[j]) {
				j++
			}
			vname = text[i+1 : j]
			i = j
		}
		if vname == "" {
			return nil, fmt.Errorf("nginxlog: log format byte %d: '$' not followed by a variable name", start)
		}
		for k := 0; k < len(vname); k++ {
			if !isNameByte(vname[k]) {
				return nil, fmt.Errorf("nginxlog: log format byte %d: invalid variable name %q", start, vname)
			}
		}
		if lead {
			f.lead = lit.String()
			lead = false
		} else {
			if lit.Len() == 0 {
				return nil, fmt.Errorf("nginxlog: log format byte %d: $%s follows $%s with no literal text between them, so a line cannot be split",
					start, vname, f.vars[len(f.vars)-1].name)
			}
			f.vars[len(f.vars)-1].after = lit.String()
		}
		lit.Reset()
		if len(f.vars) == maxVariables {
			return nil, fmt.Errorf("nginxlog: log format byte %d: more than %d variables", start, maxVariables)
		}
		f.vars = append(f.vars, newVariable(strings.ToLower(vname)))
		f.shaped = f.shaped || f.vars[len(f.vars)-1].shape != nil
	}
	if lead {
		return nil, fmt.Errorf("nginxlog: log format %q has no variables", clip(text))
	}
	f.vars[len(f.vars)-1].after = lit.String()
	f.combined = text == Combined && esc == EscapeDefault
	return f, nil
}

// newVariable compiles one variable name (lower case, without '$').
func newVariable(name string) variable {
	k, also, rank, off := classify(name)
	v := variable{name: name, kind: k, also: also, rank: rank, shape: shapeOf(k)}
	switch k {
	case kHeader:
		v.key = headerName(name[off:])
	case kCookie:
		v.key = name[off:]
	default:
		v.key = name
	}
	return v
}

// headerName turns the suffix of $http_x_forwarded_for into x-forwarded-for.
func headerName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' {
			return '-'
		}
		return r
	}, strings.ToLower(s))
}

// classify maps a lower-case nginx variable name to where its value goes. off
// is where the header or cookie name starts in name.
func classify(name string) (k, also kind, rank uint8, off int) {
	switch name {
	case "remote_addr":
		return kRemoteAddr, 0, 0, 0
	case "remote_port":
		return kRemotePort, 0, 0, 0
	case "time_local":
		return kTimeLocal, 0, 1, 0
	case "time_iso8601":
		return kTimeISO, 0, 2, 0
	case "msec":
		return kMsec, 0, 3, 0
	case "request":
		return kRequest, 0, 0, 0
	case "request_method":
		return kMethod, 0, 0, 0
	case "request_uri":
		return kRequestURI, 0, 0, 0
	case "uri", "document_uri":
		return kURI, 0, 0, 0
	case "args", "query_string":
		return kArgs, 0, 0, 0
	case "server_protocol":
		return kProtocol, 0, 0, 0
	case "status":
		return kStatus, 0, 0, 0
	case "body_bytes_sent":
		return kBytesSent, 0, 2, 0
	case "bytes_sent":
		return kBytesSent, 0, 1, 0
	case "request_time":
		return kRequestTime, 0, 0, 0
	case "host":
		return kHost, 0, 2, 0
	case "server_name":
		return kHost, 0, 1, 0
	case "ssl_server_name":
		return kSNI, 0, 0, 0
	case "ssl_alpn_protocol":
		return kALPN, 0, 0, 0
	case "ssl_ja3_hash", "http_ssl_ja3_hash":
		return kJA3, 0, 2, 0
	case "ssl_ja3", "http_ssl_ja3":
		return kJA3, 0, 1, 0
	case "ssl_ja4", "http_ssl_ja4":
		return kJA4, 0, 0, 0
	case "http_referer":
		return kHeader, kReferer, 0, len("http_")
	case "http_user_agent":
		return kHeader, kUserAgent, 0, len("http_")
	case "http_host":
		return kHeader, kHost, 3, len("http_")
	case "http_cookie":
		return kHeader, kCookieHeader, 0, len("http_")
	}
	if len(name) > len("http_") && strings.HasPrefix(name, "http_") {
		return kHeader, kVar, 0, len("http_")
	}
	if len(name) > len("cookie_") && strings.HasPrefix(name, "cookie_") {
		return kCookie, 0, 0, len("cookie_")
	}
	return kVar, 0, 0, 0
}

// shape is the set of bytes a variable's value may hold. The splitter uses it
// to recover when an unescaped value holds the literal that follows it. The
// variables with a shape are exactly those whose values nginx never escapes
// and Parse stores before touching the line.
type shape [256]bool

func newShape(chars string) *shape {
	var s shape
	for i := 0; i < len(chars); i++ {
		s[chars[i]] = true
	}
	return &s
}

var (
	shapeNumber = newShape("0123456789.-")
	shapeAddr   = newShape("0123456789abcdefABCDEF.:%unix-_")
	shapeTime   = newShape("0123456789/:+-.TZ abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
)

func shapeOf(k kind) *shape {
	switch k {
	case kRemotePort, kMsec, kStatus, kBytesSent, kRequestTime:
		return shapeNumber
	case kRemoteAddr:
		return shapeAddr
	case kTimeLocal, kTimeISO:
		return shapeTime
	}
	return nil
}

// misfit returns the index of the first byte of b outside s, or -1.
func (s *shape) misfit(b []byte) int {
	if s == nil {
		return -1
	}
	for i, c := range b {
		if !s[c] {
			return i
		}
	}
	return -1
}

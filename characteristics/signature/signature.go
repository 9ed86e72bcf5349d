package signature

import (
	"strings"
	"sync"
	"unsafe"

	"github.com/corazawaf/libinjection-go"
)

// Class is a kind of attack payload. Its names are a closed set.
type Class uint8

// Classes of payloads recognised by Scan.
const (
	Traversal       Class = iota // ../ and ..\ in a value
	LFI                          // local files: /etc/passwd, win.ini, WEB-INF/
	RFI                          // PHP stream wrappers and remote includes
	CMDi                         // OS command injection
	Log4Shell                    // ${jndi: and its obfuscations
	JavaInjection                // OGNL, Spring4Shell, SpEL, Text4Shell, FreeMarker
	PHPInjection                 // PHP-CGI arguments, ThinkPHP, eval() payloads
	Shellshock                   // () { :; };
	SSRFMetadata                 // cloud metadata endpoints
	Webshell                     // names of web shells and backdoors
	CVEProbe                     // paths that only exploit probes request
	SensitiveFile                // secrets: .env, .git/, id_rsa
	Backup                       // leftovers a site may serve: .sql, .bak, .swp, dumps
	AdminPanel                   // admin panels and appliance consoles
	WordPress                    // WordPress internals a scanner enumerates
	ScannerUA                    // names of attack tools, in a user agent
	SQLiProbe                    // SQL fragments of injection probes (union select, sleep()
	XSSProbe                     // script fragments, also HTML-escaped (&lt;script)
	NodeInjection                // Node.js and JavaScript server-side injection (process.env, require()
	EncodingEvasion              // %uXXXX escapes, a NUL byte, overlong UTF-8 in a query (ScanQuery)
	InvalidUTF8                  // other bytes that are not UTF-8 once a query is decoded (ScanQuery)
	Overflow                     // long runs of one byte, too many or too long arguments (ScanQuery)
	numClasses
)

var classNames = [numClasses]string{
	"traversal", "lfi", "rfi", "cmdi", "log4shell", "java_injection", "php_injection",
	"shellshock", "ssrf_metadata", "webshell", "cve_probe", "sensitive_file", "backup", "admin_panel",
	"wordpress", "scanner_ua", "sqli_probe", "xss_probe", "node_injection",
	"encoding_evasion", "invalid_utf8", "overflow",
}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "other"
}

// ClassNames lists the names of the classes.
func ClassNames() []string { return classNames[:] }

// ParseClass returns the class named s.
func ParseClass(s string) (Class, bool) {
	for i, n := range classNames {
		if n == s {
			return Class(i), true
		}
	}
	return 0, false
}

// ParseClasses reads one class name or several separated by '|'
// ("log4shell|cmdi") into a Mask.
func ParseClasses(s string) (Mask, bool) {
	var m Mask
	for _, n := range strings.Split(s, "|") {
		c, ok := ParseClass(n)
		if !ok {
			return 0, false
		}
		m |= 1 << c
	}
	return m, true
}

// Mask is a set of classes.
type Mask uint64

// Has reports whether c is in m.
func (m Mask) Has(c Class) bool { return m&(1<<c) != 0 }

type pattern struct {
	class Class
	text  string
}

// matcher is the automaton Scan runs, built once. Building it takes a few
// milliseconds, so init starts it in the background: a program loads its
// rules meanwhile (most of guardd replay's start-up on a short log), and the
// first Scan waits for it only if it comes sooner.
var matcher = sync.OnceValue(func() *automaton { return newAutomaton(patterns()) })

func init() { go matcher() }

// Fragments returns the text of every fragment Scan looks for, of every
// class: a caller can work out what Scan cannot tell apart (rules: the digit
// runs of a path no fragment touches).
func Fragments() []string {
	ps := patterns()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.text
	}
	return out
}

// Scan returns the classes whose fragments occur in s, ASCII case ignored,
// and those of the code shapes scanCode finds in it (tags, event handlers,
// calls of dangerous functions, shell expressions).
func Scan(s string) Mask { return matcher().scan(s) | scanCode(s) }

// sqliBytes are bytes without which libinjection finds no SQL injection
// worth acting on: a quote, a comment, a parenthesis, an operator.
const sqliBytes = "'\"`#;("

// SQLi reports whether s is SQL injection according to libinjection. Text
// with none of the bytes an injection needs is not examined.
func SQLi(s string) bool {
	if s == "" || !hasAny(s, &sqliSet) && !strings.Contains(s, "--") && !strings.Contains(s, "/*") {
		return false
	}
	ok, _ := libinjection.IsSQLi(s)
	return ok
}

// XSS reports whether s is cross-site scripting according to libinjection.
// Text without '<', '>', a quote or a parenthesis is not examined.
func XSS(s string) bool {
	if s == "" || !hasAny(s, &xssSet) {
		return false
	}
	return libinjection.IsXSS(s)
}

var sqliSet, xssSet = byteSet(sqliBytes), byteSet("<>\"'`()")

func byteSet(s string) (t [256]bool) {
	for i := 0; i < len(s); i++ {
		t[s[i]] = true
	}
	return t
}

// hasAny reports whether s has a byte of t.
func hasAny(s string, t *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if t[s[i]] {
			return true
		}
	}
	return false
}

// maxArg is the largest decoding buffer kept for reuse.
const maxArg = 2048

// QuerySQLi reports whether a value of the raw query q (name=value&...),
// percent-decoded with '+' as a space, is SQL injection. Free-text
// arguments (a search box, a query language) are left to TextInjection.
func QuerySQLi(q string) bool { return anyArg(q, testSQLi) }

// QueryXSS reports whether a value of the raw query q is XSS; free-text
// arguments are left to TextInjection.
func QueryXSS(q string) bool { return anyArg(q, testXSS) }

// TextInjection reports whether a value of a free-text argument of the raw
// query q is SQL injection or XSS.
func TextInjection(q string) bool { return anyArg(q, testText) }

type argTest uint8

const (
	testSQLi argTest = iota
	testXSS
	testText
)

func test(s string, t argTest) bool {
	switch t {
	case testSQLi:
		return SQLi(s)
	case testXSS:
		return XSS(s)
	}
	return SQLi(s) || XSS(s)
}

func anyArg(q string, t argTest) bool {
	var bp *[]byte
	defer func() {
		if bp != nil {
			argBufs.Put(bp)
		}
	}()
	for q != "" {
		part := q
		if i := strings.IndexByte(q, '&'); i >= 0 {
			part, q = q[:i], q[i+1:]
		} else {
			q = ""
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			v = part // a bare value: ?1'or'1'='1
		}
		if v == "" {
			continue
		}
		if bp == nil {
			bp = argBufs.Get().(*[]byte)
		}
		if ok && textArg(decodeInto(bp, k)) != (t == testText) || !ok && t == testText {
			continue
		}
		if test(decodeInto(bp, v), t) {
			return true
		}
	}
	return false
}

// argBufs holds buffers for decoded argument values.
var argBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// decode percent-decodes v ('+' as a space) into *bp; the result is valid
// until *bp is reused.
func decode(bp *[]byte, v string) string {
	buf := *bp
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '+' {
			c = ' '
		} else if c == '%' && i+2 < len(v) {
			h, ok1 := unhex(v[i+1])
			l, ok2 := unhex(v[i+2])
			if ok1 && ok2 {
				c = h<<4 | l
				i += 2
			}
		}
		buf = append(buf, c)
	}
	if cap(buf) > maxArg {
		out := string(buf) // do not keep large buffers in the pool
		*bp = make([]byte, 0, 256)
		return out
	}
	*bp = buf
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

package signature

// Code shapes: what a payload looks like when a fixed fragment cannot say
// it, because attackers pad, split or comment it (CRS 933160, 933210,
// 941120, 941160, 932130). scanCode finds them in one pass, looking back a
// few bytes at each of the five bytes that start one ('<', '=', '[', '(',
// '$'); text without those bytes costs a table lookup per byte.

var codeTrigger = byteSet("<=[($")

// calls maps the names of functions whose call is a payload, lower-cased,
// to the class of the payload. A call is the name, then optional spaces
// and /* comments */, then '('.
var calls = func() map[string]Class {
	m := map[string]Class{}
	for _, n := range []string{
		"exec", "system", "passthru", "shell_exec", "popen", "proc_open", "pcntl_exec", "eval", "assert",
		"phpinfo", "unserialize", "base64_decode", "gzinflate", "gzuncompress", "str_rot13", "substr",
		"unpack", "printf", "sprintf", "vprintf", "intval", "file_get_contents", "file_put_contents",
		"fopen", "fwrite", "readfile", "fpassthru", "include_once", "require_once", "preg_replace",
		"create_function", "call_user_func", "call_user_func_array", "array_map", "array_filter", "usort",
		"chr", "hex2bin", "strrev", "fsockopen", "curl_exec", "var_dump", "print_r", "highlight_file",
		"show_source", "parse_str", "putenv", "ini_set", "getenv", "posix_getpwuid", "move_uploaded_file",
		"define", "serialize", "escapeshellcmd", "dl", "symlink",
	} {
		m[n] = PHPInjection
	}
	for _, n := range []string{
		"alert", "prompt", "confirm", "setinterval", "settimeout", "atob", "fromcharcode", "execscript",
		"expression", "msgbox",
	} {
		m[n] = XSSProbe
	}
	for _, n := range []string{
		"require", "spawn", "spawnsync", "execsync", "execfile", "readdirsync", "readfilesync",
		"writefilesync", "binding", "_load",
	} {
		m[n] = NodeInjection
	}
	return m
}()

// tags are the names of HTML elements an injection opens, lower-cased: a
// '<' then (spaces allowed, letters may be spaced out: "<f o r m") one of
// these, or a name starting with one of the prefixes.
var tags = map[string]bool{
	"script": true, "img": true, "svg": true, "iframe": true, "object": true, "embed": true, "form": true,
	"dialog": true, "body": true, "style": true, "link": true, "meta": true, "base": true, "input": true,
	"details": true, "video": true, "audio": true, "math": true, "marquee": true, "frameset": true,
	"frame": true, "applet": true, "isindex": true, "x": true, "a": true, "button": true, "textarea": true,
	"select": true, "keygen": true, "template": true, "xml": true, "animate": true, "set": true,
	"handler": true, "listener": true, "bgsound": true, "layer": true, "ilayer": true, "image": true,
	"xss": true, "html": true, "table": true, "div": true, "span": true, "p": true, "b": true, "i": true,
	"u": true, "h1": true, "source": true, "track": true, "option": true, "portal": true, "noscript": true,
}

var tagPrefixes = []string{"script", "import", "svg", "iframe", "object", "embed", "xml", "animate"}

// scanCode returns the classes of the code shapes in s.
func scanCode(s string) Mask {
	var m Mask
	for i := 0; i < len(s); i++ {
		if !codeTrigger[s[i]] {
			continue
		}
		switch s[i] {
		case '<':
			if openTag(s, i+1) {
				m |= 1 << XSSProbe
			}
		case '=':
			if eventHandler(s, i) {
				m |= 1 << XSSProbe
			}
		case '[':
			if shellGlob(s, i) {
				m |= 1 << CMDi
			}
		case '(':
			m |= call(s, i)
		case '$':
			if i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{' || s[i+1] == '[') {
				m |= 1 << CMDi // $(cmd), ${var#...}, $[expr]
			}
		}
	}
	return m
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isIdent(c byte) bool { return isLetter(c) || '0' <= c && c <= '9' || c == '_' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// openTag reports whether s[i:], after a '<', opens an HTML element an
// injection uses: optional spaces or '/', then a name from tags (its letters
// possibly spaced out one by one), or '!' (a declaration: <!ENTITY).
func openTag(s string, i int) bool {
	for i < len(s) && (isSpace(s[i]) || s[i] == '/') {
		i++
	}
	if i < len(s) && s[i] == '!' {
		return i+1 < len(s) && isLetter(s[i+1])
	}
	var name [16]byte
	n := 0
	spaced := false
	for i < len(s) && n < len(name) {
		c := s[i]
		if isLetter(c) || n > 0 && '0' <= c && c <= '9' {
			name[n] = c | 0x20
			n++
			i++
			// "f o r m": single letters apart
			if i+1 < len(s) && s[i] == ' ' && isLetter(s[i+1]) && (i+2 >= len(s) || !isLetter(s[i+2]) || spaced) {
				spaced = true
				i++
			}
			continue
		}
		if c == ':' && n > 0 { // a namespace: <x:script
			for i++; i < len(s) && isSpace(s[i]); i++ {
			}
			n = 0
			continue
		}
		break
	}
	if n == 0 {
		return false
	}
	w := string(name[:n])
	if tags[w] {
		// A name alone ("a<b", "x<p") is a comparison more often than a
		// tag: a one-letter name needs what follows a tag's name.
		if n > 2 || spaced {
			return true
		}
		return i < len(s) && (isSpace(s[i]) || s[i] == '/' || s[i] == '>') && i+1 < len(s) && tagRest(s[i:])
	}
	for _, p := range tagPrefixes {
		if len(w) >= len(p) && w[:len(p)] == p {
			return true
		}
	}
	return false
}

// tagRest reports whether s, after a short tag name, holds an attribute
// (name=) or the end of the tag.
func tagRest(s string) bool {
	for i := 0; i < len(s) && i < 64; i++ {
		if s[i] == '=' || s[i] == '>' {
			return true
		}
	}
	return false
}

// eventHandler reports whether the '=' at s[i] ends an HTML event handler
// attribute ("onload=", " onmouseover =", "\"onzoom="): on and three or more
// letters, after a space, a quote, '/', '<' or ';', never at the start (a
// query argument named "online").
func eventHandler(s string, i int) bool {
	j := i
	for j > 0 && isSpace(s[j-1]) {
		j--
	}
	k := j
	for k > 0 && isLetter(s[k-1]) {
		k--
	}
	if j-k < 5 || s[k]|0x20 != 'o' || s[k+1]|0x20 != 'n' || k == 0 {
		return false
	}
	switch s[k-1] {
	case ' ', '\t', '\n', '\r', '\f', '"', '\'', '`', '/', '<', ';':
		return true
	}
	return false
}

// shellGlob reports whether the '[' at s[i] starts a shell bracket
// expression inside a path word ("/etc/pa[s]swd", "/[?]tc", "/bi[n]/sh"):
// '/', letters, '[', one to sixteen bytes without a space, ']'.
func shellGlob(s string, i int) bool {
	k := i
	for k > 0 && isIdent(s[k-1]) {
		k--
	}
	if k == 0 || s[k-1] != '/' {
		return false
	}
	for j := i + 1; j < len(s) && j <= i+17; j++ {
		switch s[j] {
		case ']':
			return j > i+1
		case ' ', '&', '=':
			return false
		}
	}
	return false
}

// call returns the class of a call whose '(' is s[i]: a name from calls
// (spaces and /* comments */ allowed before the '('), or a call of a value
// PHP-style: (system)(...), [system][0](...), "system"(...).
func call(s string, i int) Mask {
	j := i
	for {
		for j > 0 && isSpace(s[j-1]) {
			j--
		}
		if j >= 2 && s[j-1] == '/' && s[j-2] == '*' { // skip a comment back to its start
			k := j - 2
			for k >= 2 && !(s[k-2] == '/' && s[k-1] == '*') {
				k--
			}
			if k < 2 {
				return 0
			}
			j = k - 2
			continue
		}
		break
	}
	if j == 0 {
		return 0
	}
	switch s[j-1] {
	case ')', ']', '}':
		// (f)(x), [f][0](x), (string){[f][0]} (x); a space apart only when
		// the call's argument is quoted or ends in ')' and ';'
		if j == i || phpArgs(s[i:]) {
			return 1 << PHPInjection
		}
		return 0
	case '"', '\'':
		if j >= 2 && isIdent(s[j-2]) && (j == i || phpArgs(s[i:])) { // "system"(x), 'sys'.'tem'(x)
			return 1 << PHPInjection
		}
		return 0
	}
	k := j
	for k > 0 && j-k < 24 && isIdent(s[k-1]) {
		k--
	}
	if k == j || j-k >= 24 || k > 0 && isIdent(s[k-1]) {
		return 0
	}
	var name [24]byte
	for x := k; x < j; x++ {
		name[x-k] = s[x] | 0x20
		if s[x] == '_' || s[x] <= '9' {
			name[x-k] = s[x]
		}
	}
	w := name[:j-k]
	if string(w) == "function" && k >= 4 {
		// new Function(...)
		b := k
		for b > 0 && isSpace(s[b-1]) {
			b--
		}
		if b < k && b >= 3 && (s[b-3]|0x20) == 'n' && (s[b-2]|0x20) == 'e' && (s[b-1]|0x20) == 'w' {
			return 1 << NodeInjection
		}
		return 0
	}
	if c, ok := calls[string(w)]; ok {
		return 1 << c
	}
	return 0
}

// phpArgs reports whether s, from a '(', is a call's argument list that
// ends a PHP statement: "( ls );", "('uname');".
func phpArgs(s string) bool {
	for k := 1; k < len(s) && k < 64; k++ {
		if s[k] == ')' {
			for k++; k < len(s) && isSpace(s[k]); k++ {
			}
			return k < len(s) && s[k] == ';'
		}
	}
	return false
}

package nginxlog

import (
	"strconv"
	"strings"
)

// FieldError is a line that does not fit its format: which variable, where,
// what was expected and what was found. Parse and ParseJSON return it.
type FieldError struct {
	Var  string // nginx variable name without '$', "" for the shape of the line
	Pos  int    // byte offset in the line
	Want string // what was expected
	Got  string // a copy of up to 40 bytes found there
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("nginxlog: ")
	if e.Var != "" {
		b.WriteString("$")
		b.WriteString(e.Var)
		b.WriteString(" at ")
	}
	b.WriteString("byte ")
	b.WriteString(strconv.Itoa(e.Pos))
	b.WriteString(": want ")
	b.WriteString(e.Want)
	b.WriteString(", got ")
	if e.Got == "" {
		b.WriteString("end of line")
	} else {
		b.WriteString(strconv.Quote(e.Got))
	}
	return b.String()
}

// fieldError builds a FieldError, copying what it found so that the error
// outlives the line.
func fieldError(name string, pos int, want string, got []byte) *FieldError {
	const max = 40
	g := got
	if len(g) > max {
		g = g[:max]
	}
	s := string(g)
	if len(got) > max {
		s += "..."
	}
	// name may alias the line too (a ParseJSON key).
	return &FieldError{Var: strings.Clone(name), Pos: pos, Want: want, Got: s}
}

// LineError places an error at a line of a file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Err.Error()
}

func (e *LineError) Unwrap() error { return e.Err }

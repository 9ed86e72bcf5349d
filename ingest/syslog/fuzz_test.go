package syslog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"unsafe"
)

// FuzzParse: Parse never panics, its fields lie within the input, and an
// RFC 3164 message written back from its fields parses to the same fields.
func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		var m Message
		if err := Parse(in, &m); err != nil {
			return
		}
		for _, part := range [][]byte{m.Time, m.Host, m.Tag, m.Msg} {
			if len(part) > 0 && !within(in, part) {
				t.Fatalf("a field lies outside the input: %q", part)
			}
		}
		if m.Format != FormatRFC3164 {
			return
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "<%d>%s ", m.Priority, m.Time)
		if len(m.Host) > 0 {
			fmt.Fprintf(&b, "%s ", m.Host)
		}
		fmt.Fprintf(&b, "%s: %s", m.Tag, m.Msg)
		var m2 Message
		if err := Parse(b.Bytes(), &m2); err != nil {
			t.Fatalf("%q parsed, written back as %q: %v", in, b.Bytes(), err)
		}
		if m2.Priority != m.Priority || !bytes.Equal(m2.Host, m.Host) || !bytes.Equal(m2.Tag, m.Tag) || !bytes.Equal(m2.Msg, m.Msg) {
			t.Fatalf("%q: %+v, written back %q: %+v", in, m, b.Bytes(), m2)
		}
	})
}

func within(outer, inner []byte) bool {
	if len(outer) == 0 {
		return false
	}
	o := &outer[0]
	i := &inner[0]
	return uintptrOf(i) >= uintptrOf(o) && uintptrOf(i)+uintptr(len(inner)) <= uintptrOf(o)+uintptr(len(outer))
}

// FuzzFramer: the Framer never panics on any stream, never returns a frame
// over its maximum, and returns any message framed by octet counting
// exactly (and an LF-framed one too when it holds no LF).
func FuzzFramer(f *testing.F) {
	f.Add([]byte("5 <1>ab3 xyz<2>b\n"), []byte("<190>Nov 28 04:00:00 h nginx: x"))
	f.Add([]byte("99999999 "), []byte(""))
	f.Add([]byte("\n\n<1\r\n"), []byte("a\nb"))
	f.Fuzz(func(t *testing.T, stream, msg []byte) {
		if len(stream) > 1<<16 || len(msg) > 1<<12 {
			return
		}
		const max = 256
		fr := NewFramer(bytes.NewReader(stream), max)
		for range len(stream) + 1 {
			b, err := fr.Next()
			if len(b) > max {
				t.Fatalf("frame of %d bytes, max %d", len(b), max)
			}
			if err != nil && !errors.Is(err, ErrFrameTooLong) {
				break
			}
		}
		if len(msg) == 0 || len(msg) > max {
			return
		}
		var s []byte
		s = strconv.AppendInt(s, int64(len(msg)), 10)
		s = append(append(s, ' '), msg...)
		lf := bytes.IndexByte(msg, '\n') < 0 && msg[0] == '<' && msg[len(msg)-1] != '\r'
		if lf {
			s = append(append(s, msg...), '\n')
		}
		fr = NewFramer(bytes.NewReader(s), max)
		for i := range map[bool]int{true: 2, false: 1}[lf] {
			b, err := fr.Next()
			if err != nil || !bytes.Equal(b, msg) {
				t.Fatalf("frame %d of %q: %q, %v", i, s, b, err)
			}
		}
		if _, err := fr.Next(); err != io.EOF {
			t.Fatalf("after the frames: %v", err)
		}
	})
}

func uintptrOf(p *byte) uintptr { return uintptr(unsafePointer(unsafe.Slice(p, 1))) }

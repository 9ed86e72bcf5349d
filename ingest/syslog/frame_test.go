package syslog

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFramer(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name   string
		stream string
		want   []string // "ERR:..." for an error
	}{
		{"octet counting", "5 <1>ab3 xyz", []string{"<1>ab", "xyz", "EOF"}},
		{"lf", "<1>a\n<2>b\n", []string{"<1>a", "<2>b", "EOF"}},
		{"mixed", "4 <1>a<2>b\n3 <3>", []string{"<1>a", "<2>b", "<3>", "EOF"}},
		{"blank between frames", "\n\r\n<1>a\n\n", []string{"<1>a", "EOF"}},
		{"unterminated last lf frame", "<1>a\n<2>b", []string{"<1>a", "<2>b", "EOF"}},
		{"too long counted, then more", "100 " + long + "4 <1>a", []string{"ERR:" + ErrFrameTooLong.Error(), "<1>a", "EOF"}},
		{"too long lf, then more", "<" + long + "\n<1>a\n", []string{"ERR:" + ErrFrameTooLong.Error(), "<1>a", "EOF"}},
		{"count cut short", "10 <1>a", []string{"ERR:" + io.ErrUnexpectedEOF.Error()}},
		{"count not a number", "1x <1>a", []string{"ERR:" + ErrFraming.Error()}},
		{"count absurd", "99999999 ", []string{"ERR:" + ErrFraming.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFramer(strings.NewReader(tt.stream), 64)
			for i, want := range tt.want {
				b, err := f.Next()
				got := string(b)
				switch {
				case errors.Is(err, io.EOF):
					got = "EOF"
				case err != nil:
					got = "ERR:" + err.Error()
				}
				if got != want {
					t.Fatalf("frame %d: %q, want %q", i, got, want)
				}
			}
		})
	}
}

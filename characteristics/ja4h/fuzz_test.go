package ja4h

import (
	"fmt"
	"testing"
)

func FuzzParser(f *testing.F) {
	f.Add([]byte(h1), uint16(7))
	f.Add([]byte(crlf(foxioRust)), uint16(100))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /x HTTP/1.0\r\nX: a\r\n b\r\n\r\n"), uint16(50))
	f.Add([]byte("CONNECT h:443 HTTP/1.1\r\n\r\n\x16\x03\x01"), uint16(3))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		if len(b) > 1<<16 {
			return
		}
		// Invariant: every way of cutting the stream gives the same requests
		// and the same stop.
		one, _, doneOne := run(b)
		c := int(cut) % (len(b) + 1)
		two, _, doneTwo := run(b[:c], b[c:])
		each, _, doneEach := run(bytewise(b)...)
		if fmt.Sprint(one) != fmt.Sprint(two) || fmt.Sprint(one) != fmt.Sprint(each) {
			t.Fatalf("requests differ by feeding:\n%v\n%v\n%v", one, two, each)
		}
		if doneOne != doneTwo || doneOne != doneEach {
			t.Fatalf("done differs: %v %v %v", doneOne, doneTwo, doneEach)
		}
		for _, e := range one {
			if len(e.ja4h) != 51 || e.raw[:12] != e.ja4h[:12] {
				t.Fatalf("bad fingerprint %q", e.ja4h)
			}
		}
	})
}

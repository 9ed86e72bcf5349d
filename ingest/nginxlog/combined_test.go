package nginxlog

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"testing"

	"github.com/guardd/guardd/characteristics"
)

// combinedSeeds are lines on both sides of every check parseCombined makes.
var combinedSeeds = []string{
	benchCombined,
	`2001:db8::1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/2.0" 200 0 "-" "curl/8.0"`,
	`::ffff:192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 0 "-" "-"`,
	`192.0.2.1 - alice [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 0 "" ""`,
	`192.0.2.1 - a - b [c [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 0 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "-" 400 0 "-" "-"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "" 400 0 "-" "-"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "\x16\x03\x01\x00" 400 157 "-" "-"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET /caf\xC3\xA9?q=\x22x\x22 HTTP/1.1" 200 5316 "-" "Mozilla/5.0 \x22quoted\x22"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET /a" b" 200 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" - 0 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 - "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 1000 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 99999999999999999999 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "a"b"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "r" "x" "y"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-"`,
	`192.0.2.1 - - [10/Oct/2023:25:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000"GET / HTTP/1.1" 200 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36] "GET / HTTP/1.1" 200 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x\"`,
	`unix: - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x"`,
	`- - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x"`,
	`192.0.2.300 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x"`,
	` - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x"`,
	`192.0.2.1 -  [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1"  200 1 "-" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "a\" "b" "x"`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" ""`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "`,
	`192.0.2.1 - - [10/Oct/2023:13:55:36 +0000] "CONNECT example.com:443 HTTP/1.1" 200 1 "-" "x"`,
}

// parseBoth parses data with Parse (which tries parseCombined first) and with
// the general path alone, and fails if they differ in any way: the error, the
// event, or the line as rewritten in place.
func parseBoth(t *testing.T, f *Format, data []byte) (accepted bool) {
	t.Helper()
	var probe, es characteristics.Event
	accepted = f.parseCombined(bytes.Clone(data), &probe, nil)
	slow := bytes.Clone(data)
	errS := f.parse(slow, &es)
	if accepted && errS != nil {
		t.Fatalf("line %q: fast path accepted a line the general path rejects: %v", data, errS)
	}
	// Without a time cache, with one holding another line's time, and with
	// one holding this line's time (a hit).
	var c Cache
	c.parse([]byte("10/Oct/2023:13:55:36 +0000"))
	for i, cache := range []*Cache{nil, &c, &c} {
		fast := bytes.Clone(data)
		var ef characteristics.Event
		errF := f.ParseCache(fast, &ef, cache)
		if (errF == nil) != (errS == nil) || errF != nil && errF.Error() != errS.Error() {
			t.Fatalf("line %q, cache %d:\nParse error %v\ngeneral path %v", data, i, errF, errS)
		}
		if !reflect.DeepEqual(ef, es) {
			t.Fatalf("line %q, cache %d:\nParse        %+v\ngeneral path %+v", data, i, ef, es)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("line %q, cache %d: rewritten as %q by Parse, %q by the general path", data, i, fast, slow)
		}
	}
	return accepted
}

func TestCombinedFastPath(t *testing.T) {
	f := MustCompile("combined")
	if !f.combined {
		t.Fatal("combined format not marked for the fast path")
	}
	for _, s := range []string{Combined, "log_format c '" + Combined + "';"} {
		if g := MustCompile(s); !g.combined {
			t.Errorf("%q: not marked for the fast path", s)
		}
	}
	for _, s := range []string{"log_format c escape=json '" + Combined + "';", Combined + " "} {
		if g := MustCompile(s); g.combined {
			t.Errorf("%q: marked for the fast path", s)
		}
	}
	accepted := 0
	for _, s := range combinedSeeds {
		if parseBoth(t, f, []byte(s)) {
			accepted++
		}
	}
	data, err := os.ReadFile("testdata/combined.log")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.SplitSeq(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if parseBoth(t, f, line) {
			accepted++
		}
	}
	// Most lines take the fast path, or it would be dead code.
	if accepted < 10 {
		t.Errorf("fast path took %d lines", accepted)
	}
}

// FuzzCombinedFastPath holds parseCombined to the general path: any line it
// accepts parses to the same event, and Parse's result never depends on
// which path it took.
func FuzzCombinedFastPath(f *testing.F) {
	for _, s := range combinedSeeds {
		f.Add([]byte(s))
	}
	for _, tc := range parseCases {
		f.Add([]byte(tc.line))
	}
	fm := MustCompile("combined")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzLine {
			return
		}
		parseBoth(t, fm, data)
	})
}

func TestCombinedFastPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	f := MustCompile("combined")
	line := []byte(benchCombined)
	buf := make([]byte, len(line))
	var e characteristics.Event
	var c Cache
	copy(buf, line)
	if !f.parseCombined(buf, &e, &c) {
		t.Fatal("benchmark line not on the fast path")
	}
	if n := testing.AllocsPerRun(1000, func() {
		copy(buf, line)
		f.parseCombined(buf, &e, &c)
	}); n != 0 {
		t.Errorf("parseCombined allocates %v times per line", n)
	}
}

// TestTimeCacheEveryByte: a cached time is reused only for the very same
// text, whichever of its bytes differs (the cache compares them as words).
func TestTimeCacheEveryByte(t *testing.T) {
	const base = "10/Oct/2023:13:45:36 +0100"
	var c Cache
	for i := range len(base) {
		for _, d := range []byte("0123456789") {
			if base[i] < '0' || base[i] > '9' || base[i] == d {
				continue
			}
			other := []byte(base)
			other[i] = d
			want, wantOK := parseTimeLocal(other)
			if !wantOK {
				continue
			}
			if _, ok := c.parse([]byte(base)); !ok {
				t.Fatal("base time does not parse")
			}
			if got, ok := c.parse(other); !ok || !got.Equal(want) {
				t.Fatalf("%s after %s: %v, %v; want %v", other, base, got, ok, want)
			}
		}
	}
}

// TestCacheAddrs: an address looked up through the Cache is what parseAddr
// gives, on a hit, on a miss, for more addresses than slots, for addresses
// crafted to share a slot (the same length and last eight bytes), and for
// texts that do not parse (never remembered).
func TestCacheAddrs(t *testing.T) {
	var texts []string
	for i := range 3 * addrSlots {
		texts = append(texts, fmt.Sprintf("2001:db8:%x::%x", i%7, i))
		texts = append(texts, fmt.Sprintf("2001:db8:%x:1:2:3:4:%x", i, i%5)) // same tail as others
		texts = append(texts, fmt.Sprintf("%x:db8::1:2:3:4:abcd", i))        // same tail, same length
	}
	texts = append(texts, "::ffff:203.0.113.7", "fe80::1%eth0", "1.2.3.4", "01.2.3.4", "2001:db8::g", "::", "x")
	var c Cache
	for round := range 2 {
		for _, s := range texts {
			got, gotOK := c.addr([]byte(s))
			want, wantOK := parseAddr([]byte(s))
			if got != want || gotOK != wantOK {
				t.Fatalf("round %d: %q through the cache: %v %v, parseAddr %v %v", round, s, got, gotOK, want, wantOK)
			}
		}
	}
	if got, ok := (*Cache)(nil).addr([]byte("2001:db8::1")); !ok || got != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("nil cache: %v %v", got, ok)
	}
}

func TestCacheAddrsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	var c Cache
	a, b := []byte("2001:db8:330:d4fd:4ef5:18ca:1c19:24db"), []byte("2001:db8:330:d4fd:4ef5:18ca:1c19:24dc")
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		c.addr(a)
		b[len(b)-1] = "0123456789abcdef"[i%16] // a miss every other call
		c.addr(b)
		i++
	}); n != 0 {
		t.Errorf("%v allocs per lookup", n)
	}
}

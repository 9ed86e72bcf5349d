package nginxlog

import (
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/cputime"
)

// benchParse parses line with parse, restoring it first since Parse may
// unescape in place; the copy (a few ns) is part of what is measured.
func benchParse(b *testing.B, line string, parse func([]byte, *characteristics.Event) error) {
	src := []byte(line)
	buf := make([]byte, len(src))
	var e characteristics.Event
	copy(buf, src)
	if err := parse(buf, &e); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		copy(buf, src)
		if err := parse(buf, &e); err != nil {
			b.Fatal(err)
		}
	}
	cputime.Report(b, cpu, int64(b.N), "cpu-ns/op")
}

const benchCombined = `203.0.113.7 - - [10/Oct/2023:13:55:36 +0000] "GET /products/item?id=12345&ref=home HTTP/1.1" 200 5316 "https://www.example.com/products" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36"`

func BenchmarkParseCombined(b *testing.B) {
	benchParse(b, benchCombined, MustCompile("combined").Parse)
}

// BenchmarkParseCombinedCache parses with a Cache, as a pipeline worker
// does: the lines of a log share their time, here all of them.
func BenchmarkParseCombinedCache(b *testing.B) {
	f, c := MustCompile("combined"), new(Cache)
	benchParse(b, benchCombined, func(line []byte, e *characteristics.Event) error { return f.ParseCache(line, e, c) })
}

func BenchmarkParseCombinedEscaped(b *testing.B) {
	benchParse(b, `203.0.113.7 - - [10/Oct/2023:13:55:36 +0000] "GET /caf\xC3\xA9?q=\x22x\x22 HTTP/1.1" 200 5316 "-" "Mozilla/5.0 \x22quoted\x22"`, MustCompile("combined").Parse)
}

func BenchmarkParseCustom(b *testing.B) {
	benchParse(b, `192.0.2.44 51234 - - [10/Oct/2023:13:55:36 +0000] "GET /cart?id=7 HTTP/1.1" 200 512 "https://www.example.com/" "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0" 0.042 "203.0.113.9, 10.0.0.1" "s3ss10n" TLSv1.3 0.040`,
		MustCompile(customDirective).Parse)
}

func BenchmarkParseJSONFormat(b *testing.B) {
	benchParse(b, `{"ip":"2001:db8::1","port":"443","time":"2024-05-01T12:00:00+02:00","req":"GET /a?c=d HTTP/2.0","status":429,"ua":"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0","host":"example.com","cookie":"a=1; b=2","ms":1714557600.250}`,
		MustCompile(jsonDirective).Parse)
}

func BenchmarkParseJSON(b *testing.B) {
	benchParse(b, `{"time_iso8601":"2024-05-01T12:00:00+00:00","remote_addr":"192.0.2.7","remote_port":"50000","request":"GET /x?y=1 HTTP/1.1","status":200,"body_bytes_sent":1234,"request_time":"0.005","http_referer":"-","http_user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0","http_host":"example.com"}`,
		ParseJSON)
}

// BenchmarkParseTimeLocal prices the $time_local parse alone: it is what a
// last-second cache would save.
func BenchmarkParseTimeLocal(b *testing.B) {
	in := []byte("10/Oct/2023:13:55:36 +0200")
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		if _, ok := parseTimeLocal(in); !ok {
			b.Fatal("bad time")
		}
	}
	cputime.Report(b, cpu, int64(b.N), "cpu-ns/op")
}

// BenchmarkParseAdversarial prices a line whose attacker-chosen $remote_user
// ("a [a [a [...", 9 KB) sends the splitter through its whole budget of
// alternative splits before the line is rejected.
func BenchmarkParseAdversarial(b *testing.B) {
	f := MustCompile("combined")
	line := []byte(`192.0.2.1 - ` + strings.Repeat("a [", 3000) + ` [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`)
	var e characteristics.Event
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		if f.Parse(line, &e) == nil {
			b.Fatal("parsed")
		}
	}
	cputime.Report(b, cpu, int64(b.N), "cpu-ns/op")
}

// BenchmarkAddrIPv6 parses IPv6 client addresses as parseCombined does:
// without the Cache (parse), through it with addresses repeating as a log's
// do (hit: 64 clients in turn), and through it with a new address every call
// (unique: what hostile traffic does to it; it must cost no more than about
// 1.2x parse). Each op writes a counter into the address's last group first.
func BenchmarkAddrIPv6(b *testing.B) {
	const hexDigits = "0123456789abcdef"
	buf := []byte("2001:db8:330:d4fd:4ef5:18ca:1c19:0000")
	set := func(i int) {
		n := len(buf)
		buf[n-1], buf[n-2], buf[n-3], buf[n-4] = hexDigits[i&15], hexDigits[i>>4&15], hexDigits[i>>8&15], hexDigits[i>>12&15]
	}
	for _, bc := range []struct {
		name  string
		cache bool
		mod   int
	}{{"parse", false, 1 << 16}, {"hit", true, 64}, {"unique", true, 1 << 16}} {
		b.Run(bc.name, func(b *testing.B) {
			var c *Cache
			if bc.cache {
				c = new(Cache)
			}
			b.ReportAllocs()
			i, cpu := 0, cputime.Process()
			for b.Loop() {
				set(i % bc.mod)
				if _, ok := c.addr(buf); !ok {
					b.Fatal("not an address")
				}
				i++
			}
			cputime.Report(b, cpu, int64(i), "cpu-ns/op")
		})
	}
}

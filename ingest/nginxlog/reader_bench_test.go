package nginxlog

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/cputime"
	"github.com/klauspost/compress/zstd"
)

const benchFileLines = 1_000_000

var (
	benchFilesOnce sync.Once
	benchDir       string
	benchFilesErr  error
)

// benchFiles writes a 1M-line combined log, plain and gzip (default level, as
// logrotate leaves it), once per test binary. The lines vary as real traffic
// does: many clients, paths, agents, one second every few lines.
func benchFiles(b *testing.B) (plain, gz string) {
	plain, gz, _ = benchFiles3(b)
	return plain, gz
}

func benchFiles3(b *testing.B) (plain, gz, zst string) {
	benchFilesOnce.Do(func() {
		benchDir, benchFilesErr = os.MkdirTemp("", "nginxlog-bench")
		if benchFilesErr != nil {
			return
		}
		benchFilesErr = writeBenchFiles(benchDir)
	})
	if benchFilesErr != nil {
		b.Fatal(benchFilesErr)
	}
	return filepath.Join(benchDir, "access.log"), filepath.Join(benchDir, "access.log.1"), filepath.Join(benchDir, "access.log.2")
}

func writeBenchFiles(dir string) error {
	pf, err := os.Create(filepath.Join(dir, "access.log"))
	if err != nil {
		return err
	}
	defer pf.Close()
	gf, err := os.Create(filepath.Join(dir, "access.log.1"))
	if err != nil {
		return err
	}
	defer gf.Close()
	zf, err := os.Create(filepath.Join(dir, "access.log.2"))
	if err != nil {
		return err
	}
	defer zf.Close()
	zw := gzip.NewWriter(gf)
	zsw, err := zstd.NewWriter(zf)
	if err != nil {
		return err
	}
	pw := bufio.NewWriterSize(pf, 1<<20)
	w := io.MultiWriter(pw, zw, zsw)
	f := MustCompile("combined")
	rng := rand.New(rand.NewPCG(1, 2))
	agents := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
		"curl/8.4.0", "python-requests/2.31.0", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	}
	paths := []string{"/", "/login", "/api/v1/items", "/products/item", "/static/app.js", "/search", "/wp-login.php"}
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var line []byte
	var e characteristics.Event
	for i := range benchFileLines {
		e.Reset()
		e.IP = netip.AddrFrom4([4]byte{byte(rng.IntN(200) + 1), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		e.Time = t0.Add(time.Duration(i/5) * time.Second)
		e.Method, e.Protocol = "GET", "HTTP/1.1"
		e.Path = paths[rng.IntN(len(paths))]
		if rng.IntN(2) == 0 {
			e.Query = fmt.Sprintf("id=%d&page=%d", rng.IntN(100000), rng.IntN(20))
		}
		e.Status = []int{200, 200, 200, 304, 404, 401, 500}[rng.IntN(7)]
		e.BytesSent = int64(rng.IntN(50000))
		if rng.IntN(2) == 0 {
			e.Referer = "https://www.example.com" + paths[rng.IntN(len(paths))]
		}
		e.UserAgent = agents[rng.IntN(len(agents))]
		line = append(f.Append(line[:0], &e), '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	if err := pw.Flush(); err != nil {
		return err
	}
	if err := zsw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// benchRead reads path through Reader, once per iteration, and reports lines/s.
func benchRead(b *testing.B, path string, parse bool) {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	f := MustCompile("combined")
	var e characteristics.Event
	b.ReportAllocs()
	start, cpu := time.Now(), cputime.Process()
	lines := 0
	for b.Loop() {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for {
			line, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if parse {
				if err := f.Parse(line, &e); err != nil {
					b.Fatal(err)
				}
			}
			lines++
		}
		r.Close()
	}
	b.ReportMetric(float64(lines)/time.Since(start).Seconds(), "lines/s")
	b.ReportMetric(float64(st.Size())/float64(benchFileLines), "file-bytes/line")
	cputime.Report(b, cpu, int64(lines), "cpu-ns/op")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkReadPlain(b *testing.B) {
	plain, _ := benchFiles(b)
	benchRead(b, plain, false)
}

func BenchmarkReadGzip(b *testing.B) {
	_, gz := benchFiles(b)
	benchRead(b, gz, false)
}

func BenchmarkReadZstd(b *testing.B) {
	_, _, zst := benchFiles3(b)
	benchRead(b, zst, false)
}

func BenchmarkReadParsePlain(b *testing.B) {
	plain, _ := benchFiles(b)
	benchRead(b, plain, true)
}

func BenchmarkReadParseGzip(b *testing.B) {
	_, gz := benchFiles(b)
	benchRead(b, gz, true)
}

// benchPipeline reads path in batches on one goroutine and parses them on
// GOMAXPROCS workers, the shape of guardd replay, and reports lines/s.
func benchPipeline(b *testing.B, path string) {
	f := MustCompile("combined")
	workers := runtime.GOMAXPROCS(0)
	b.ReportAllocs()
	start, cpu := time.Now(), cputime.Process()
	lines := 0
	for b.Loop() {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		free := make(chan *Batch, 2*workers)
		work := make(chan *Batch, 2*workers)
		for range 2 * workers {
			free <- new(Batch)
		}
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var e characteristics.Event
				for bt := range work {
					for i := range bt.Len() {
						if err := f.Parse(bt.Line(i), &e); err != nil {
							panic(err)
						}
					}
					free <- bt
				}
			}()
		}
		for {
			bt := <-free
			if err := r.ReadBatch(bt, 1024); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			lines += bt.Len()
			work <- bt
		}
		close(work)
		wg.Wait()
		r.Close()
	}
	b.ReportMetric(float64(lines)/time.Since(start).Seconds(), "lines/s")
	cputime.Report(b, cpu, int64(lines), "cpu-ns/op")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkPipelinePlain(b *testing.B) {
	plain, _ := benchFiles(b)
	benchPipeline(b, plain)
}

func BenchmarkPipelineGzip(b *testing.B) {
	_, gz := benchFiles(b)
	benchPipeline(b, gz)
}

func BenchmarkPipelineZstd(b *testing.B) {
	_, _, zst := benchFiles3(b)
	benchPipeline(b, zst)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

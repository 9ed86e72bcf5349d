// Command decideload drives a decision API (or anything that answers
// HTTP/1.1 keep-alive requests, such as nginx `return 204`) with the
// requests bench/challenge.sh measures, where wrk is not installed: each
// request is a GET /v1/decide as nginx's auth subrequest sends it, from the
// next client of a clearances file (see bench/cmd/clearances) with its
// clearance cookie. It runs -c connections for -d and prints requests/s,
// the latency percentiles and the answers that were not 204.
//
//	go run ./bench/cmd/decideload -addr 127.0.0.1:19495 -file clearances.txt -c 32 -d 10s
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "", "host:port to send the requests to")
	file := flag.String("file", "", "the clearances file: ADDRESS TOKEN per line")
	conns := flag.Int("c", 32, "connections")
	dur := flag.Duration("d", 10*time.Second, "duration")
	ua := flag.String("ua", "Mozilla/5.0", "User-Agent (the one the clearances bind)")
	flag.Parse()
	if *addr == "" || *file == "" || *conns < 1 {
		fmt.Fprintln(os.Stderr, "usage: decideload -addr HOST:PORT -file CLEARANCES [-c N] [-d D]")
		os.Exit(2)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var next atomic.Uint64
	var done atomic.Bool
	var mu sync.Mutex
	var lat []time.Duration
	var total, other atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for !done.Load() {
				// A server may close a keep-alive connection (nginx after
				// keepalive_requests): dial again, as wrk does.
				mine = oneConn(*addr, lines, *ua, &next, &done, &total, &other, mine)
			}
		}()
	}
	time.Sleep(*dur)
	done.Store(true)
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	fmt.Printf("Requests/sec: %.0f  (%d in %v, %d connections)  p50 %v  p99 %v  not 204: %d\n",
		float64(total.Load())/el.Seconds(), total.Load(), el.Round(time.Millisecond), *conns, pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), other.Load())
}

// oneConn sends requests on one connection until it fails or done, and
// returns the latencies with its own appended.
func oneConn(addr string, lines []string, ua string, next *atomic.Uint64, done *atomic.Bool, total, other *atomic.Int64, mine []time.Duration) []time.Duration {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		time.Sleep(10 * time.Millisecond)
		return mine
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 4096)
	var buf []byte
	for !done.Load() {
		n := next.Add(1)
		ip, tok, _ := strings.Cut(lines[n%uint64(len(lines))], " ")
		buf = append(buf[:0], "GET /v1/decide HTTP/1.1\r\nHost: guardd\r\nX-Real-IP: "...)
		buf = append(buf, ip...)
		buf = append(buf, "\r\nX-Original-Method: GET\r\nX-Original-URI: /product/"...)
		buf = strconv.AppendUint(buf, n%5000, 10)
		buf = append(buf, "\r\nUser-Agent: "...)
		buf = append(buf, ua...)
		buf = append(buf, "\r\nAccept: text/html\r\nCookie: session=s"...)
		buf = strconv.AppendUint(buf, n, 10)
		buf = append(buf, "; guardd_clearance="...)
		buf = append(buf, tok...)
		buf = append(buf, "\r\n\r\n"...)
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return mine
		}
		status, length := 0, 0
		for first := true; ; first = false {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return mine
			}
			s := strings.TrimRight(string(line), "\r\n")
			if first {
				if len(s) >= 12 {
					status, _ = strconv.Atoi(s[9:12])
				}
				continue
			}
			if s == "" {
				break
			}
			if k, v, ok := strings.Cut(s, ":"); ok && strings.EqualFold(k, "content-length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if length > 0 {
			if _, err := br.Discard(length); err != nil {
				return mine
			}
		}
		mine = append(mine, time.Since(t0))
		total.Add(1)
		if status != 204 {
			other.Add(1)
		}
	}
	return mine
}

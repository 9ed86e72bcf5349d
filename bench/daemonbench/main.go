// Command daemonbench drives a running `guardd run` for the benchmarks in
// bench/decision.sh and bench/banlatency.sh:
//
//	daemonbench load    -admin ADDR -token FILE -n 100000        fill the mitigation table through the admin API
//	daemonbench latency -log FILE -decide ADDR -rate 100000 ...  time from a tripping log line to the decision API's denial
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: daemonbench load|latency [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "load":
		err = load(os.Args[2:])
	case "latency":
		err = latency(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemonbench:", err)
		os.Exit(1)
	}
}

// load adds n block mitigations on distinct addresses in 10.0.0.0/8.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	admin := fs.String("admin", "127.0.0.1:9481", "admin API")
	tokenFile := fs.String("token", "", "admin token file")
	n := fs.Int("n", 100000, "mitigations")
	fs.Parse(args)
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(tok))
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < *n; i += 16 {
				body, _ := json.Marshal(map[string]any{"scope": map[string]string{"ip.src": fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}, "action": "block", "duration": "2h"})
				req, _ := http.NewRequest("POST", "http://"+*admin+"/v1/mitigations", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 201 {
					errs <- fmt.Errorf("add: %s", resp.Status)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("loaded %d mitigations in %.1fs\n", *n, time.Since(start).Seconds())
	return nil
}

// latency appends benign lines at rate per second and, every interval, an
// attacker's burst of failed logins; it measures from writing the tripping
// line to the decision API answering 401 for that attacker.
func latency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	logPath := fs.String("log", "", "access log guardd tails")
	decide := fs.String("decide", "127.0.0.1:9480", "decision API")
	rate := fs.Int("rate", 100000, "benign lines per second in the background")
	rounds := fs.Int("rounds", 20, "attacks to time")
	burst := fs.Int("burst", 12, "failed logins per attack (the rule's limit must be below this)")
	fs.Parse(args)
	f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex // one writer at a time, whole lines only
	w := bufio.NewWriterSize(f, 1<<20)
	line := func(b []byte, ip, method, path string, status int, t time.Time) []byte {
		return fmt.Appendf(b, "%s - - [%s] \"%s %s HTTP/1.1\" %d 512 \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0\"\n",
			ip, t.Format("02/Jan/2006:15:04:05 -0700"), method, path, status)
	}
	stop := make(chan struct{})
	var written int64
	go func() { // background: rate lines/s in 100 slices per second
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := *rate / 100
		var buf []byte
		i := 0
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				buf = buf[:0]
				for range per {
					i++
					buf = line(buf, fmt.Sprintf("172.16.%d.%d", i>>8&255, i&255), "GET", fmt.Sprintf("/product/%d", i%5000), 200, now)
				}
				mu.Lock()
				w.Write(buf)
				w.Flush()
				written += int64(per)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(2 * time.Second) // let the background rate settle
	c := &http.Client{Timeout: time.Second}
	var lat []time.Duration
	for r := range *rounds {
		ip := fmt.Sprintf("198.18.9.%d", r+1)
		var buf []byte
		now := time.Now()
		for range *burst - 1 {
			buf = line(buf, ip, "POST", "/login", 401, now)
		}
		mu.Lock()
		w.Write(buf)
		w.Flush()
		mu.Unlock()
		time.Sleep(200 * time.Millisecond) // everything before the tripping line is in
		mu.Lock()
		w.Write(line(nil, ip, "POST", "/login", 401, time.Now()))
		w.Flush()
		t0 := time.Now()
		mu.Unlock()
		for {
			req, _ := http.NewRequest("GET", "http://"+*decide+"/v1/decide", nil)
			req.Header.Set("X-Real-IP", ip)
			req.Header.Set("X-Original-Method", "POST")
			req.Header.Set("X-Original-URI", "/login")
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 401 {
					break
				}
			}
			if time.Since(t0) > 10*time.Second {
				return fmt.Errorf("round %d: %s never blocked", r, ip)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(300 * time.Millisecond)
	}
	close(stop)
	slices.Sort(lat)
	fmt.Printf("ban latency over %d attacks with %d benign lines/s in the background (%d lines written): median %.1f ms, p90 %.1f ms, max %.1f ms\n",
		len(lat), *rate, written, ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), ms(lat[len(lat)-1]))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

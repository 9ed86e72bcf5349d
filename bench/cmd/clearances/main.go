// Command clearances writes challenge clearances for benchmarks: one line
// per client, "ADDRESS TOKEN", for n distinct addresses from 10.0.0.0 up,
// signed with the key file guardd will read (created 0600 when absent, as
// guardd does on first start).
//
//	go run ./bench/cmd/clearances -keys state/challenge.key -n 1000000 -ua Mozilla/5.0 > clearances.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/guardd/guardd/challenge"
)

func main() {
	keys := flag.String("keys", "", "the challenge key file (challenge.key_file)")
	n := flag.Int("n", 1000000, "distinct clients, from 10.0.0.0 up")
	ua := flag.String("ua", "Mozilla/5.0", "the User-Agent the clearances bind")
	ttl := flag.Duration("ttl", 24*time.Hour, "how long the clearances stay valid")
	flag.Parse()
	if *keys == "" || *n < 1 || *n > 1<<24 {
		fmt.Fprintln(os.Stderr, "usage: clearances -keys FILE [-n N (1 to 16777216)] [-ua UA] [-ttl D]")
		os.Exit(2)
	}
	kr, err := challenge.LoadKeyring(*keys)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	g, err := challenge.New(challenge.Config{Keys: kr, ClearanceTTL: *ttl})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	now := time.Now()
	for i := range *n {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		fmt.Fprintf(w, "%s %s\n", ip, g.IssueClearance(challenge.Subject{IP: ip, UserAgent: *ua}, now))
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

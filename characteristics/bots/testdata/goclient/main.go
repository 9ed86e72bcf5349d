// Command goclient fetches a URL with Go's net/http from a given local
// address, skipping certificate checks: it stands for Go tooling in
// capture.sh.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: goclient LOCAL-ADDR USER-AGENT SNI URL")
		os.Exit(2)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(os.Args[1])}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: os.Args[3]}, ForceAttemptHTTP2: true}}
	req, _ := http.NewRequest("GET", os.Args[4], nil)
	req.Header.Set("User-Agent", os.Args[2])
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

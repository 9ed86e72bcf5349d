package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/testwait"
)

const liveJA4Rule = `# METADATA
# title: one TLS stack, many connections
# custom:
#   characteristics: [tls.ja4]
#   period: 1h
#   requests_per_period: 1
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.live_ja4

count if startswith(input.tls.ja4, "t13")

mitigate if true
`

// TestDaemonLiveSniff captures on lo while Go TLS clients connect to a local
// server, then feeds log lines of those connections (by client port): the
// JA4 sniffed live must reach the rules through the join.
func TestDaemonLiveSniff(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root for AF_PACKET capture")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "ja4.rego"), []byte(liveJA4Rule), 0o644)
	writeTestConfig(t, dir, `
log: {format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $remote_port'}
fingerprint: {interfaces: [lo]}
`)
	td := startDaemon(t, dir)
	defer td.stop(t)
	// The capture is open once its drop counter is registered.
	testwait.Until(t, patience, "the capture on lo to open", func() bool {
		mfs, _ := td.d.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "guardd_sniff_kernel_drops_total" {
				return true
			}
		}
		return false
	})

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	var (
		lines []string
		ports []uint16
	)
	for range 2 {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, ServerName: "example.test"})
		if err != nil {
			t.Fatal(err)
		}
		port := c.LocalAddr().(*net.TCPAddr).Port
		ports = append(ports, uint16(port))
		c.Close()
		lines = append(lines, fmt.Sprintf(`127.0.0.1 - - [%s] "GET / HTTP/1.1" 200 5 "-" "Go" %d`, time.Now().Format("02/Jan/2006:15:04:05 -0700"), port))
	}
	// Both hellos are in the join table (loopback may carry other tests'
	// traffic, so ask for these connections, not for a count).
	testwait.Until(t, patience, "both hellos in the join table", func() bool {
		for _, p := range ports {
			ev := characteristics.Event{IP: netip.MustParseAddr("127.0.0.1"), Port: p, Time: time.Now()}
			if !td.d.join.Enrich(&ev) || ev.TLS.JA4 == "" {
				return false
			}
		}
		return true
	})
	td.appendLines(t, lines...)
	testwait.Until(t, patience, "a mitigation on the sniffed JA4", func() bool {
		for _, m := range td.d.store.List(time.Now()) {
			if m.Rule == "live_ja4" && len(m.Scope) == 1 && m.Scope[0].Name == "tls.ja4" && strings.HasPrefix(m.Scope[0].Value, "t13") {
				t.Logf("mitigation on %s", m.Scope)
				return true
			}
		}
		return false
	})
}

func selfSigned(t *testing.T) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"example.test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

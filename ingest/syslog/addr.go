package syslog

import (
	"fmt"
	"net/netip"
	"strings"
)

// Network is the kind of socket a listener reads. The set is closed, and
// its String is safe as a metric label.
type Network uint8

// Networks of Addr.
const (
	Unixgram Network = iota // a Unix datagram socket: nginx's server=unix:PATH
	UDP                     // nginx's server=ADDR:PORT
	TCP                     // RFC 6587 framing, from rsyslog, syslog-ng, logger --tcp
	numNetworks
)

var networkNames = [numNetworks]string{"unixgram", "udp", "tcp"}

func (n Network) String() string {
	if n < numNetworks {
		return networkNames[n]
	}
	return "other"
}

// Addr is where a listener listens: "unixgram:/run/guardd/nginx.sock",
// "udp:127.0.0.1:5514", "tcp:[::1]:5514".
type Addr struct {
	Network Network
	Address string // a path, or host:port
}

func (a Addr) String() string { return a.Network.String() + ":" + a.Address }

// AcceptedForms is what ParseAddr accepts, for error messages.
const AcceptedForms = `"unixgram:/path/to.sock", "udp:ADDRESS:PORT" or "tcp:ADDRESS:PORT" (ADDRESS an IP address, [::1] for IPv6)`

// ParseAddr parses a listen address. The address of udp and tcp must be a
// literal IP and a port: a host name would be resolved once, at start.
func ParseAddr(s string) (Addr, error) {
	network, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Addr{}, fmt.Errorf("syslog: listen %q: want %s", s, AcceptedForms)
	}
	switch network {
	case "unixgram":
		if !strings.HasPrefix(rest, "/") {
			return Addr{}, fmt.Errorf("syslog: listen %q: want an absolute socket path after unixgram:", s)
		}
		return Addr{Network: Unixgram, Address: rest}, nil
	case "udp", "tcp":
		ap, err := netip.ParseAddrPort(rest)
		if err != nil || ap.Port() == 0 && !strings.HasSuffix(rest, ":0") {
			return Addr{}, fmt.Errorf("syslog: listen %q: want %s:ADDRESS:PORT with a literal IP address and a port", s, network)
		}
		n := UDP
		if network == "tcp" {
			n = TCP
		}
		return Addr{Network: n, Address: ap.String()}, nil
	}
	return Addr{}, fmt.Errorf("syslog: listen %q: unknown network %q; want %s", s, network, AcceptedForms)
}

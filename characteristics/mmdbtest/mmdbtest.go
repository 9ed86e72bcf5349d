// Package mmdbtest writes small MaxMind-format databases for tests, so no test
// ever downloads one. Networks may be documentation ranges (192.0.2.0/24,
// 2001:db8::/32): reserved networks are included.
package mmdbtest

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Network is one entry: ASN and Country may each be zero.
type Network struct {
	Prefix  netip.Prefix
	ASN     uint32
	Org     string
	Country string // ISO 3166 alpha-2
}

// Write writes a database holding nets to path, with the record layout of
// GeoLite2-ASN and GeoLite2-Country combined.
func Write(path string, nets []Network) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            "guardd-test",
		IncludeReservedNetworks: true,
		RecordSize:              24,
	})
	if err != nil {
		return fmt.Errorf("mmdbtest: %w", err)
	}
	for _, n := range nets {
		rec := mmdbtype.Map{}
		if n.ASN != 0 {
			rec["autonomous_system_number"] = mmdbtype.Uint32(n.ASN)
			rec["autonomous_system_organization"] = mmdbtype.String(n.Org)
		}
		if n.Country != "" {
			rec["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(n.Country)}
		}
		p := n.Prefix.Masked()
		ipnet := &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
		if err := tree.Insert(ipnet, rec); err != nil {
			return fmt.Errorf("mmdbtest: insert %s: %w", p, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("mmdbtest: %w", err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("mmdbtest: write %s: %w", path, err)
	}
	return f.Close()
}

package nftables

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// netlinkTimeout bounds every exchange with the kernel, so a reply that never
// comes cannot hang the pusher. Dumping an interval set is slow (15 s for
// 100,000 ranges on an idle machine, see bench/nftables.md).
const netlinkTimeout = 2 * time.Minute

// sendBuffer is the netlink send buffer asked for: room for the largest
// batch (BatchElements at most 65536 IPv6 elements of about 40 bytes).
const sendBuffer = 4 << 20

// kernel is the netlink side: the table, sets, chains and rules guardd owns.
type kernel struct {
	netns   int
	table   *nftables.Table
	sets    [numSets]*nftables.Set
	chains  []*nftables.Chain
	ruleTag [numSets][]byte // rule comment, which marks guardd's rules

	smallBuffer atomic.Bool // SO_SNDBUFFORCE was refused: large batches will be split
}

func newKernel(cfg Config) *kernel {
	k := &kernel{netns: cfg.NetNSFd}
	k.table = &nftables.Table{Name: cfg.Table, Family: nftables.TableFamily(families[cfg.Family])}
	for i := range numSets {
		s := &nftables.Set{
			Table:        k.table,
			Name:         cfg.SetPrefix + setNames[i],
			HasTimeout:   true,
			Interval:     i.interval(),
			KeyType:      nftables.TypeIPAddr,
			KeyByteOrder: binaryutil.BigEndian,
		}
		if i.family() == "ipv6" {
			s.KeyType = nftables.TypeIP6Addr
		}
		k.sets[i] = s
		k.ruleTag[i] = userdata.AppendString(nil, userdata.TypeComment, "guardd "+s.Name)
	}
	if !cfg.SetsOnly {
		prio := nftables.ChainPriority(cfg.Priority)
		accept := nftables.ChainPolicyAccept
		for _, h := range cfg.Hooks {
			hook := nftables.ChainHookInput
			if h == "forward" {
				hook = nftables.ChainHookForward
			}
			k.chains = append(k.chains, &nftables.Chain{
				Name: h, Table: k.table, Type: nftables.ChainTypeFilter,
				Hooknum: hook, Priority: &prio, Policy: &accept,
			})
		}
	}
	return k
}

// conn returns a connection that dials a fresh netlink socket for each
// exchange, with a deadline: a failed batch cannot leave stray replies behind
// for the next one.
func (k *kernel) conn() (*nftables.Conn, error) {
	opts := []nftables.ConnOption{nftables.WithSockOptions(func(c *netlink.Conn) error {
		if err := c.SetDeadline(time.Now().Add(netlinkTimeout)); err != nil {
			return err
		}
		// A batch is sent with one sendmsg, which fails with EMSGSIZE past
		// the send buffer (net.core.wmem_default, 208 KiB: under 8,192
		// IPv4 elements). Like nft, force a larger one (CAP_NET_ADMIN);
		// where that is refused the default stays, and refused batches are
		// split.
		rc, err := c.SyscallConn()
		if err != nil {
			return nil
		}
		rc.Control(func(fd uintptr) {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sendBuffer) != nil {
				k.smallBuffer.Store(true)
			}
		})
		return nil
	})}
	if k.netns != 0 {
		opts = append(opts, nftables.WithNetNSFd(k.netns))
	}
	return nftables.New(opts...)
}

// ensure creates what is missing of the table, sets, chains and rules, and
// replaces the rules of a chain that do not match guardd's. It reports
// whether anything was missing or altered.
func (k *kernel) ensure() (repaired bool, err error) {
	c, err := k.conn()
	if err != nil {
		return false, err
	}
	if _, err := c.ListTableOfFamily(k.table.Name, k.table.Family); err != nil {
		repaired = true
	} else {
		sets, err := c.GetSets(k.table)
		if err != nil {
			return false, fmt.Errorf("list sets: %w", err)
		}
		for _, s := range k.sets {
			if !slices.ContainsFunc(sets, func(h *nftables.Set) bool { return h.Name == s.Name }) {
				repaired = true
			}
		}
	}
	c.AddTable(k.table)
	for _, s := range k.sets {
		if err := c.AddSet(s, nil); err != nil {
			return false, fmt.Errorf("set %s: %w", s.Name, err)
		}
	}
	for _, ch := range k.chains {
		c.AddChain(ch)
	}
	if err := c.Flush(); err != nil {
		return false, fmt.Errorf("create table %s: %w", k.table.Name, err)
	}
	for _, ch := range k.chains {
		rules, err := c.GetRules(k.table, ch)
		if err != nil {
			return false, fmt.Errorf("list rules of chain %s: %w", ch.Name, err)
		}
		if k.rulesOK(rules) {
			continue
		}
		repaired = true
		c.FlushChain(ch)
		for i := range numSets {
			s := k.sets[i]
			c.AddRule(&nftables.Rule{Table: k.table, Chain: ch, Exprs: dropExprs(i, s), UserData: k.ruleTag[i]})
		}
		if err := c.Flush(); err != nil {
			return false, fmt.Errorf("rules of chain %s: %w", ch.Name, err)
		}
	}
	return repaired, nil
}

func (k *kernel) rulesOK(rules []*nftables.Rule) bool {
	if len(rules) != int(numSets) {
		return false
	}
	for i, r := range rules {
		if !bytes.Equal(r.UserData, k.ruleTag[i]) {
			return false
		}
	}
	return true
}

// dropExprs is `ip saddr @set counter drop` (ip6 saddr for IPv6 sets).
func dropExprs(k setKind, s *nftables.Set) []expr.Any {
	proto, off, n := byte(unix.NFPROTO_IPV4), uint32(12), uint32(4)
	if k.family() == "ipv6" {
		proto, off, n = unix.NFPROTO_IPV6, 8, 16
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// read returns the elements of the four sets, with absolute expiries at now.
// An element without timeout (added by hand) gets a far expiry, so it
// differs from any wanted one and is replaced or deleted.
func (k *kernel) read(now time.Time) (state, error) {
	c, err := k.conn()
	if err != nil {
		return state{}, err
	}
	st := newState()
	for i := range numSets {
		s := k.sets[i]
		els, err := c.GetSetElements(s)
		if err != nil {
			return state{}, fmt.Errorf("read set %s: %w", s.Name, err)
		}
		exp := func(e nftables.SetElement) time.Time {
			if e.Timeout == 0 {
				return now.Add(100 * 365 * 24 * time.Hour).Round(time.Second)
			}
			return now.Add(e.Expires).Round(time.Second)
		}
		if !i.interval() {
			for _, e := range els {
				if a, ok := netip.AddrFromSlice(e.Key); ok {
					st[i][span{lo: a}] = elem{exp: exp(e)}
				}
			}
			continue
		}
		slices.SortFunc(els, func(a, b nftables.SetElement) int {
			if c := bytes.Compare(a.Key, b.Key); c != 0 {
				return c
			}
			switch {
			case a.IntervalEnd == b.IntervalEnd:
				return 0
			case a.IntervalEnd:
				return -1
			}
			return 1
		})
		for j, e := range els {
			if e.IntervalEnd {
				continue // an end alone (nft adds one at 0) blocks nothing
			}
			lo, ok := netip.AddrFromSlice(e.Key)
			if !ok {
				continue
			}
			s := span{lo: lo}
			el := elem{exp: exp(e)}
			if j+1 < len(els) {
				s.hi, _ = netip.AddrFromSlice(els[j+1].Key)
				el.noEnd = !els[j+1].IntervalEnd
			}
			st[i][s] = el
		}
	}
	return st, nil
}

// opKind is what an op does to one span.
type opKind uint8

const (
	opAdd     opKind = iota
	opDelete         // delete, ENOENT counts as done
	opReplace        // delete and add in one batch: a new timeout without a gap
)

// op is one change to one set.
type op struct {
	kind opKind
	set  setKind
	s    span
	e    elem // the new element for add and replace; the old one's noEnd for delete
	old  elem // for replace: the element deleted
}

// elements is how many set elements op sends.
func (o op) elements() int {
	n := 1
	if o.set.interval() && o.s.hi.IsValid() {
		n = 2
	}
	if o.kind == opReplace {
		n *= 2
	}
	return n
}

// encode returns the set elements of s; with timeout > 0 they carry it.
func encode(s span, e elem, timeout time.Duration, interval bool) []nftables.SetElement {
	out := []nftables.SetElement{{Key: s.lo.AsSlice(), Timeout: timeout}}
	if interval && s.hi.IsValid() && !e.noEnd {
		out = append(out, nftables.SetElement{Key: s.hi.AsSlice(), IntervalEnd: true})
	}
	return out
}

// send applies ops in one netlink batch (one transaction): deletions first,
// then additions.
func (k *kernel) send(ops []op, now time.Time) error {
	c, err := k.conn()
	if err != nil {
		return err
	}
	var dels, adds [numSets][]nftables.SetElement
	for _, o := range ops {
		iv := o.set.interval()
		switch o.kind {
		case opDelete:
			dels[o.set] = append(dels[o.set], encode(o.s, o.e, 0, iv)...)
		case opReplace:
			dels[o.set] = append(dels[o.set], encode(o.s, o.old, 0, iv)...)
			fallthrough
		case opAdd:
			adds[o.set] = append(adds[o.set], encode(o.s, o.e, timeoutAt(o.e.exp, now), iv)...)
		}
	}
	for i, s := range k.sets {
		for _, part := range splitList(dels[i]) {
			if err := c.SetDeleteElements(s, part); err != nil {
				return err
			}
		}
	}
	for i, s := range k.sets {
		for _, part := range splitList(adds[i]) {
			if err := c.SetAddElements(s, part); err != nil {
				return err
			}
		}
	}
	return c.Flush()
}

// maxListBytes bounds the element list of one netlink message. The list is
// one nested attribute, whose length is 16 bits: github.com/google/nftables
// v0.3.0 does not check, and a longer list wraps its length, so the kernel
// silently adds only the first elements (2,340 IPv4 addresses of 2,500 sent
// get through as 159) or fails the batch. The margin covers rounding.
const maxListBytes = 65535 - 1024

// elementBytes is the encoded size of e in a list: the nested item header,
// the key (a nested NFTA_DATA_VALUE), the flags of an interval end and the
// timeout.
func elementBytes(e nftables.SetElement) int {
	n := 4 + 4 + 4 + (len(e.Key)+3)&^3
	if e.IntervalEnd {
		n += 8
	}
	if e.Timeout > 0 {
		n += 12
	}
	return n
}

// splitList cuts els into lists that fit one message each.
func splitList(els []nftables.SetElement) [][]nftables.SetElement {
	var parts [][]nftables.SetElement
	start, size := 0, 0
	for i, e := range els {
		n := elementBytes(e)
		// An interval's end stays with its start: a start is cut off
		// unless its end (36 bytes at most) fits too.
		if size+n+36 > maxListBytes && i > start && !e.IntervalEnd {
			parts = append(parts, els[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(els) {
		parts = append(parts, els[start:])
	}
	return parts
}

// timeoutAt is the element timeout for expiry exp, at least one second (an
// element of zero timeout would never expire).
func timeoutAt(exp, now time.Time) time.Duration {
	d := exp.Sub(now).Truncate(time.Millisecond)
	if d < time.Second {
		d = time.Second
	}
	return d
}

// fatal reports whether err is about the connection or the permission, not
// about an element: splitting the batch cannot help.
func fatal(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
		errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) ||
		errors.Is(err, unix.ETIMEDOUT) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errNoStructure)
}

// errNoStructure means the table or a set is missing: a reconcile recreates it.
var errNoStructure = errors.New("table or set missing")

// Package decap peels link layers and tunnels off a captured frame down to
// the innermost IP header and its TCP or UDP header.
//
// It promises:
//   - Decode never panics and never reads outside the frame, whatever the
//     bytes; a malformed or truncated frame gives a *DecodeError, a frame
//     that holds no TCP or UDP (ARP, ICMP, a pending fragment) gives an
//     error wrapping ErrNotTransport, which callers skip without counting it
//     as malformed.
//   - Link types: Ethernet (Linux lo too), Linux SLL and SLL2, DLT_NULL in
//     either byte order, DLT_LOOP, raw IP (101, 12, 14, 228, 229).
//   - Tunnels, nested in any order up to MaxDepth layers: 802.1Q, QinQ
//     (0x88a8, 0x9100), PPPoE sessions, MPLS, GRE (checksum, key, sequence; IP, MPLS and
//     transparent Ethernet payloads), ERSPAN types I, II and III, VXLAN
//     (either port, GPE), GENEVE, IPv4/IPv6 in IPv4/IPv6.
//   - IPv4 options and IPv6 extension headers are skipped; an IPv4 total
//     length or IPv6 payload length of 0 (TSO/GSO, BIG TCP) means "use the
//     captured length"; checksums are never checked.
//   - With Config.Defragment, IPv4 and IPv6 fragments are reassembled in a
//     bounded table (first copy of overlapping bytes wins, oldest datagram
//     evicted when full).
//   - The Ethernet/IPv4/TCP path costs no allocation and well under 100 ns.
//
// It gives up:
//   - gopacket's generic layer graph: the hot path is a hand-written loop
//     over the same wire formats, decoding into the caller's Packet the way
//     DecodingLayerParser does, because ERSPAN I and III, DLT_NULL byte
//     order guessing and tunnel detection on either UDP port need custom
//     decoding anyway and the generic parser costs several times more.
//   - Anything but TCP and UDP as the innermost transport (SCTP, ICMP, ESP
//     are counted as unsupported), PPP outside PPPoE, 802.11, GRE version 1
//     (PPTP), VXLAN-GPE carrying NSH.
//   - Concurrency: a Decoder belongs to one goroutine. Packet.Payload and a
//     returned *DecodeError are valid until the next Decode call.
package decap

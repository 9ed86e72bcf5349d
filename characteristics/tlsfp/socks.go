package tlsfp

import "bytes"

// SOCKSPreamble measures the client side of a SOCKS handshake at the start of
// a client-to-server stream, so that TLS detection can start after it:
//   - SOCKS4/4a: 04 01 port(2) ipv4(4) userid 00, plus domain 00 when the
//     address is 0.0.0.x (4a);
//   - SOCKS5: 05 nmethods methods, an optional username/password
//     sub-negotiation (01 ulen user plen pass, RFC 1929), then the CONNECT
//     request 05 01 00 atyp addr port.
//
// It returns the preamble's length n > 0 when it is complete, more=true when
// b is a valid but incomplete prefix, and (0, false) when b is not SOCKS.
func SOCKSPreamble(b []byte) (n int, more bool) {
	if len(b) == 0 {
		return 0, true
	}
	switch b[0] {
	case 4:
		return socks4(b)
	case 5:
		return socks5(b)
	}
	return 0, false
}

const maxSOCKSField = 255

func socks4(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, true
	}
	if b[1] != 1 { // CONNECT only
		return 0, false
	}
	if len(b) < 8 {
		return 0, true
	}
	n := 8
	end := bytes.IndexByte(b[n:min(len(b), n+maxSOCKSField+1)], 0)
	if end < 0 {
		return 0, len(b) < n+maxSOCKSField+1
	}
	n += end + 1
	if b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] != 0 { // 4a: a domain follows
		end = bytes.IndexByte(b[n:min(len(b), n+maxSOCKSField+1)], 0)
		if end < 0 {
			return 0, len(b) < n+maxSOCKSField+1
		}
		n += end + 1
	}
	return n, false
}

func socks5(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, true
	}
	nm := int(b[1])
	if nm == 0 {
		return 0, false
	}
	n := 2 + nm
	if len(b) < n+1 {
		return 0, true
	}
	if b[n] == 1 {
		// Username/password sub-negotiation (offered and chosen).
		if len(b) < n+2 {
			return 0, true
		}
		ul := int(b[n+1])
		if len(b) < n+2+ul+1 {
			return 0, true
		}
		pl := int(b[n+2+ul])
		n += 3 + ul + pl
	}
	// CONNECT request.
	if len(b) < n+5 {
		return 0, true
	}
	if b[n] != 5 || b[n+1] != 1 || b[n+2] != 0 {
		return 0, false
	}
	switch b[n+3] {
	case 1:
		n += 4 + 4 + 2
	case 4:
		n += 4 + 16 + 2
	case 3:
		n += 4 + 1 + int(b[n+4]) + 2
	default:
		return 0, false
	}
	if len(b) < n {
		return 0, true
	}
	return n, false
}

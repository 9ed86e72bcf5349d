package tlsfp

import (
	"slices"
	"testing"
)

func TestSOCKSPreamble(t *testing.T) {
	tls := []byte{22, 3, 1, 0, 5, 1}
	tests := []struct {
		name string
		pre  []byte
		ok   bool
	}{
		{"socks4", []byte{4, 1, 1, 187, 127, 0, 0, 1, 'u', 0}, true},
		{"socks4 empty userid", []byte{4, 1, 1, 187, 127, 0, 0, 1, 0}, true},
		{"socks4a", slices.Concat([]byte{4, 1, 1, 187, 0, 0, 0, 1, 0}, []byte("example.test\x00")), true},
		{"socks5 ipv4", []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 1, 187}, true},
		{"socks5 domain", slices.Concat([]byte{5, 2, 0, 2, 5, 1, 0, 3, 12}, []byte("example.test"), []byte{1, 187}), true},
		{"socks5 ipv6", slices.Concat([]byte{5, 1, 0, 5, 1, 0, 4}, make([]byte, 16), []byte{1, 187}), true},
		{"socks5 user/pass", slices.Concat([]byte{5, 1, 2, 1, 1, 'u', 2, 'p', 'w', 5, 1, 0, 1, 10, 0, 0, 1, 1, 187}), true},
		{"socks5 bind refused", []byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 1, 187}, false},
		{"tls", nil, false},
		{"http", []byte("GET / HTTP/1.1\r\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := slices.Concat(tt.pre, tls)
			n, more := SOCKSPreamble(stream)
			if !tt.ok {
				if n != 0 || more {
					t.Errorf("SOCKSPreamble = %d, %v; want 0, false", n, more)
				}
				return
			}
			if n != len(tt.pre) || !LooksLikeClientHelloRecord(stream[n:]) {
				t.Fatalf("SOCKSPreamble = %d, want %d", n, len(tt.pre))
			}
			for i := range len(tt.pre) {
				if n, more := SOCKSPreamble(tt.pre[:i]); n != 0 || !more {
					t.Errorf("prefix %d: %d, %v; want 0, true", i, n, more)
				}
			}
		})
	}
}

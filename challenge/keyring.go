package challenge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
)

// KeySize is the length of an HMAC-SHA256 key.
const KeySize = 32

// key is one HMAC-SHA256 key. Its MACs are computed by a few crypto/hmac
// states kept with it, which restore the SHA-256 state after the inner and
// outer pads rather than hashing them again: a token's MAC costs two
// SHA-256 blocks instead of four, and allocates nothing.
type key struct {
	id   uint32
	macs []macState
}

// macState is one HMAC of a key, used by one goroutine at a time, with room
// for the message and the sum so that nothing passed to it escapes from
// the caller's stack. The padding keeps two states off one cache line.
type macState struct {
	mu  sync.Mutex
	h   hash.Hash
	msg [maxMessage]byte
	sum [sha256.Size]byte
	_   [64]byte
}

func newKey(secret [KeySize]byte) key {
	// Two states per processor: a goroutine finds a free one at its first
	// or second try, and waits only when more goroutines sign at once.
	n := max(4, 2*runtime.GOMAXPROCS(0))
	k := key{id: keyID(secret), macs: make([]macState, n)}
	for i := range k.macs {
		k.macs[i].h = hmac.New(sha256.New, secret[:])
		// The first Reset saves the padded states; later ones restore them.
		k.macs[i].h.Reset()
	}
	return k
}

// keyID names a key in the tokens it signs: the first four bytes of its
// SHA-256, so the file holds nothing but the keys.
func keyID(secret [KeySize]byte) uint32 {
	h := sha256.Sum256(secret[:])
	return binary.BigEndian.Uint32(h[:4])
}

// maxMessage bounds what a key signs (a token's payload).
const maxMessage = 192

// mac returns HMAC-SHA256(key, msg) (RFC 2104) without allocating; msg is
// at most maxMessage bytes.
func (k *key) mac(msg []byte) [sha256.Size]byte {
	m := k.state()
	n := copy(m.msg[:], msg)
	m.h.Reset()
	m.h.Write(m.msg[:n])
	sum := [sha256.Size]byte(m.h.Sum(m.sum[:0]))
	m.mu.Unlock()
	return sum
}

// state returns one of the key's HMAC states, locked: the first free one
// from a random start, or the start one once it is free.
func (k *key) state() *macState {
	start := int(mrand.Uint32N(uint32(len(k.macs))))
	for i := range k.macs {
		m := &k.macs[(start+i)%len(k.macs)]
		if m.mu.TryLock() {
			return m
		}
	}
	m := &k.macs[start]
	m.mu.Lock()
	return m
}

// Keyring holds the keys that sign and check tokens: the first signs, all
// are accepted. Two keys give a rotation with overlap: a new key is put
// first, and tokens of the previous one stay valid until they expire.
// A Keyring is immutable and safe for concurrent use.
type Keyring struct {
	keys []key
}

// NewKeyring returns a keyring of secrets, the first of which signs.
func NewKeyring(secrets ...[KeySize]byte) (*Keyring, error) {
	if len(secrets) == 0 {
		return nil, errors.New("challenge: no key")
	}
	kr := &Keyring{}
	for _, s := range secrets {
		k := newKey(s)
		for _, o := range kr.keys {
			if o.id == k.id {
				return nil, fmt.Errorf("challenge: key %08x given twice", k.id)
			}
		}
		kr.keys = append(kr.keys, k)
	}
	return kr, nil
}

// current is the signing key.
func (kr *Keyring) current() *key { return &kr.keys[0] }

// find returns the key with id, nil if none.
func (kr *Keyring) find(id uint32) *key {
	for i := range kr.keys {
		if kr.keys[i].id == id {
			return &kr.keys[i]
		}
	}
	return nil
}

// IDs returns the key ids, the signing key's first.
func (kr *Keyring) IDs() []uint32 {
	ids := make([]uint32, len(kr.keys))
	for i, k := range kr.keys {
		ids[i] = k.id
	}
	return ids
}

// Key files hold one key per line, 64 hex digits, the signing key first;
// '#' starts a comment. At most maxKeys keys.
const maxKeys = 2

const keyFileHeader = "# guardd challenge keys (docs/rules.md): the first line signs, the second is still accepted.\n" +
	"# Copy this file to every node of a fleet; keep it mode 0600.\n"

// LoadKeyring reads the key file at path, creating it (mode 0600, one key
// from crypto/rand) when it does not exist. A file that the group or others
// can read, or that holds no valid key, is refused.
func LoadKeyring(path string) (*Keyring, error) {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := writeKeyFile(path, nil); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(path, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("challenge: key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("challenge: key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("challenge: key file %s: mode %04o lets others read it; want 0600 (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	secrets, err := parseKeyFile(string(b[:n]))
	if err != nil {
		return nil, fmt.Errorf("challenge: key file %s: %w", path, err)
	}
	return NewKeyring(secrets...)
}

// parseKeyFile reads the keys of a key file.
func parseKeyFile(s string) ([][KeySize]byte, error) {
	var keys [][KeySize]byte
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		var k [KeySize]byte
		if len(line) != 2*KeySize {
			return nil, fmt.Errorf("line %d: want %d hex digits, got %d characters", i+1, 2*KeySize, len(line))
		}
		if _, err := hex.Decode(k[:], []byte(line)); err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		if k == ([KeySize]byte{}) {
			return nil, fmt.Errorf("line %d: a key of zeros", i+1)
		}
		keys = append(keys, k)
		if len(keys) > maxKeys {
			return nil, fmt.Errorf("line %d: more than %d keys", i+1, maxKeys)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	return keys, nil
}

// RotateKeyFile puts a new random key first in the key file at path and
// keeps the one that signed until now second (dropping an older one), so
// tokens signed before stay valid until they expire. Restart (or copy the
// file to the fleet and restart) to use it.
func RotateKeyFile(path string) error {
	if _, err := LoadKeyring(path); err != nil { // refuses a readable file
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("challenge: key file: %w", err)
	}
	secrets, err := parseKeyFile(string(b))
	if err != nil {
		return fmt.Errorf("challenge: key file %s: %w", path, err)
	}
	return writeKeyFile(path, secrets[:1])
}

// writeKeyFile writes a new random key followed by keep, atomically, mode 0600.
func writeKeyFile(path string, keep [][KeySize]byte) error {
	var k [KeySize]byte
	rand.Read(k[:])
	var sb strings.Builder
	sb.WriteString(keyFileHeader)
	sb.WriteString(hex.EncodeToString(k[:]))
	sb.WriteByte('\n')
	for _, o := range keep {
		sb.WriteString(hex.EncodeToString(o[:]))
		sb.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(dirOf(path), ".challenge-key-*")
	if err != nil {
		return fmt.Errorf("challenge: key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("challenge: key file: %w", err)
	}
	if _, err := tmp.WriteString(sb.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("challenge: key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("challenge: key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("challenge: key file: %w", err)
	}
	if keep == nil {
		// First start: never replace a file another process just made.
		if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("challenge: key file: %w", err)
		}
		return nil
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("challenge: key file: %w", err)
	}
	return nil
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, os.PathSeparator); i >= 0 {
		return path[:i+1]
	}
	return "."
}

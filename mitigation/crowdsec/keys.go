package crowdsec

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// KeyFileName is the key file's name inside guardd's state directory.
const KeyFileName = "crowdsec-bouncers.json"

// Bouncer is one registered bouncer. Only the SHA-256 of its key is kept.
type Bouncer struct {
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"` // hex of sha256(key)
	Created time.Time `json:"created"`
}

type keyFile struct {
	Bouncers []Bouncer `json:"bouncers"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// ErrExists is returned by AddBouncer for a name already registered.
var ErrExists = errors.New("crowdsec: bouncer already registered")

// ListBouncers reads the key file at path; a missing file holds no bouncers.
func ListBouncers(path string) ([]Bouncer, error) {
	kf, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	return kf.Bouncers, nil
}

// AddBouncer registers name with a new random key, which it returns: the
// file keeps only the key's hash, so this is the one time the key is known.
func AddBouncer(path, name string, now time.Time) (key string, err error) {
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("crowdsec: bouncer name %q: want 1 to 64 of A-Z a-z 0-9 . _ @ -, starting with a letter or digit", name)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("crowdsec: key: %w", err)
	}
	key = hex.EncodeToString(raw[:])
	err = updateKeyFile(path, func(kf *keyFile) error {
		for _, b := range kf.Bouncers {
			if b.Name == name {
				return fmt.Errorf("%w: %q", ErrExists, name)
			}
		}
		kf.Bouncers = append(kf.Bouncers, Bouncer{Name: name, SHA256: hashKey(key), Created: now.UTC().Truncate(time.Second)})
		return nil
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// DeleteBouncer removes name, reporting whether it was registered.
func DeleteBouncer(path, name string) (bool, error) {
	found := false
	err := updateKeyFile(path, func(kf *keyFile) error {
		out := kf.Bouncers[:0]
		for _, b := range kf.Bouncers {
			if b.Name == name {
				found = true
				continue
			}
			out = append(out, b)
		}
		kf.Bouncers = out
		return nil
	})
	return found && err == nil, err
}

func hashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func readKeyFile(path string) (keyFile, error) {
	var kf keyFile
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return kf, nil
	}
	if err != nil {
		return kf, fmt.Errorf("crowdsec: key file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return kf, fmt.Errorf("crowdsec: key file %s: %w", path, err)
	}
	for i, bc := range kf.Bouncers {
		if !nameRE.MatchString(bc.Name) {
			return kf, fmt.Errorf("crowdsec: key file %s: bouncer %d: invalid name %q", path, i+1, bc.Name)
		}
		if h, err := hex.DecodeString(bc.SHA256); err != nil || len(h) != sha256.Size {
			return kf, fmt.Errorf("crowdsec: key file %s: bouncer %q: sha256 is not 64 hex digits", path, bc.Name)
		}
	}
	return kf, nil
}

// updateKeyFile applies f under an exclusive lock on path+".lock" and writes
// the result atomically (temp file, fsync, rename, directory fsync), 0600.
func updateKeyFile(path string, f func(*keyFile) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("crowdsec: key file: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("crowdsec: key file lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("crowdsec: key file lock: %w", err)
	}
	kf, err := readKeyFile(path)
	if err != nil {
		return err
	}
	if err := f(&kf); err != nil {
		return err
	}
	sort.Slice(kf.Bouncers, func(i, j int) bool { return kf.Bouncers[i].Name < kf.Bouncers[j].Name })
	if kf.Bouncers == nil {
		kf.Bouncers = []Bouncer{}
	}
	data, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return fmt.Errorf("crowdsec: key file: %w", err)
	}
	if err := writeFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("crowdsec: key file: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// keyring maps key hashes to bouncer names, reloaded when the file changes.
type keyring struct {
	path   string
	mod    time.Time
	size   int64
	ino    uint64
	byHash map[string]string
}

// reloadLocked rereads the file when its identity, size or mtime changed. On
// a read error it keeps the previous keys and returns the error.
func (k *keyring) reloadLocked() error {
	fi, err := os.Stat(k.path)
	if errors.Is(err, os.ErrNotExist) {
		k.byHash, k.mod, k.size, k.ino = nil, time.Time{}, 0, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("crowdsec: key file: %w", err)
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	if k.byHash != nil && fi.ModTime().Equal(k.mod) && fi.Size() == k.size && ino == k.ino {
		return nil
	}
	kf, err := readKeyFile(k.path)
	if err != nil {
		return err
	}
	m := make(map[string]string, len(kf.Bouncers))
	for _, b := range kf.Bouncers {
		m[b.SHA256] = b.Name
	}
	k.byHash, k.mod, k.size, k.ino = m, fi.ModTime(), fi.Size(), ino
	return nil
}

// lookupLocked returns the bouncer holding key. Comparing hashes through a
// map leaks nothing useful by timing: an attacker would need preimages.
func (k *keyring) lookupLocked(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	name, ok := k.byHash[hashKey(key)]
	return name, ok
}

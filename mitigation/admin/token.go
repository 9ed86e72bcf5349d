package admin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// LoadToken reads the bearer token from path, creating a random one (0600)
// when the file does not exist.
func LoadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if t := strings.TrimSpace(string(b)); len(t) >= 16 {
			return t, nil
		}
		return "", fmt.Errorf("admin: token file %s: token shorter than 16 characters", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("admin: token file: %w", err)
	}
	var raw [24]byte
	rand.Read(raw[:])
	t := hex.EncodeToString(raw[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin: token file: %w", err)
	}
	return t, nil
}

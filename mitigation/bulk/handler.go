package bulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// ActorHeader names who is making a change through the admin API (the CLI
// sends user@host); the daemon logs it with the peer's address.
const ActorHeader = "X-Guardd-Actor"

// Actor describes who made the request r, for the log: the ActorHeader value
// (or "unknown") and the peer address.
func Actor(r *http.Request) string {
	a := r.Header.Get(ActorHeader)
	if a == "" || len(a) > 128 {
		a = "unknown"
	}
	return a + " from " + r.RemoteAddr
}

// Adder is the store as the import handler uses it (*mitigation.Store).
type Adder interface {
	AddAll(ms []mitigation.Mitigation, now time.Time) (held []mitigation.Mitigation, allowlisted int, err error)
}

// Importer serves POST /v1/mitigations/bulk: a body of JSON lines (Read's
// JSONLines form) added all at once, or none when a line is bad. It answers
// {"added":N,"allowlisted":M} or {"error":"line N: ..."}.
type Importer struct {
	Store    Adder
	Log      *slog.Logger     // nil discards
	Now      func() time.Time // nil means time.Now
	MaxBytes int64            // body cap; 0 means 1 GiB
}

// ImportResult is the answer to a successful import.
type ImportResult struct {
	Added       int `json:"added"`
	Allowlisted int `json:"allowlisted"`
}

func (im *Importer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if im.Now != nil {
		now = im.Now()
	}
	limit := im.MaxBytes
	if limit == 0 {
		limit = 1 << 30
	}
	// Read it all first: a body cut at the cap must not look like a bad line.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("body over %d bytes", limit)})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
		return
	}
	ms, err := Read(bytes.NewReader(body), JSONLines, Defaults{Action: mitigation.ActionBlock}, now)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	held, allowlisted, err := im.Store.AddAll(ms, now)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	log := im.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("mitigations imported", "by", Actor(r), "added", len(held), "allowlisted", allowlisted)
	writeJSON(w, http.StatusOK, ImportResult{Added: len(held), Allowlisted: allowlisted})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

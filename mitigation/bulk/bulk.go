package bulk

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guardd/guardd/mitigation"
)

// Format is a file format for mitigations.
type Format uint8

// The formats.
const (
	JSONLines Format = iota // one JSON object per line, the Mitigation JSON form
	CSV                     // a header row, then one mitigation per row
	List                    // one address or CIDR per line; '#' starts a comment
	numFormats
)

var formatNames = [numFormats]string{"jsonl", "csv", "list"}

func (f Format) String() string {
	if f < numFormats {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat parses jsonl (or json), csv or list (or txt).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "jsonl", "json", "ndjson":
		return JSONLines, nil
	case "csv":
		return CSV, nil
	case "list", "txt", "values":
		return List, nil
	}
	return 0, fmt.Errorf("bulk: format %q: want jsonl, csv or list", s)
}

// FormatOf guesses a file's format from its extension: .csv is CSV, .txt and
// .list a list, anything else JSON lines.
func FormatOf(name string) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return CSV
	case ".txt", ".list", ".lst":
		return List
	}
	return JSONLines
}

// Defaults fill what a record leaves out.
type Defaults struct {
	Action   mitigation.Action
	Duration time.Duration // 0: a record without expires or duration is an error
	Rule     string        // "" means "import"
}

// MaxRecords bounds one read: more is an error, not a truncation.
const MaxRecords = 10_000_000

// CSVColumns are the columns Write gives a CSV file, and the ones Read
// accepts (in any order, by the header row; scope or value is required).
var CSVColumns = []string{"id", "rule", "action", "scope", "characteristic", "value", "created", "expires", "duration", "origin"}

// record is one JSON line. Unknown members are errors; id, created and origin
// are accepted so that exported files import as they are.
type record struct {
	ID             uint64           `json:"id"`
	Rule           string           `json:"rule"`
	Action         string           `json:"action"`
	Scope          mitigation.Scope `json:"scope"`
	Characteristic string           `json:"characteristic"`
	Value          string           `json:"value"`
	Created        string           `json:"created"`
	Expires        string           `json:"expires"`
	Duration       string           `json:"duration"`
	Origin         string           `json:"origin"`
	Reason         string           `json:"reason"`
}

// Read reads mitigations in format f, filling gaps from d; now turns durations
// into expiries. Errors name the line.
func Read(r io.Reader, f Format, d Defaults, now time.Time) ([]mitigation.Mitigation, error) {
	if d.Rule == "" {
		d.Rule = "import"
	}
	switch f {
	case JSONLines:
		return readJSONLines(r, d, now)
	case CSV:
		return readCSV(r, d, now)
	case List:
		return readList(r, d, now)
	}
	return nil, fmt.Errorf("bulk: unknown format %d", f)
}

func readJSONLines(r io.Reader, d Defaults, now time.Time) ([]mitigation.Mitigation, error) {
	return readLines(r, d, now, func(b []byte) (rec record, skip bool, err error) {
		if b = bytes.TrimSpace(b); len(b) == 0 {
			return rec, true, nil
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return rec, false, err
		}
		if dec.More() {
			return rec, false, errors.New("more than one JSON value")
		}
		return rec, false, nil
	})
}

// readLines reads r a line at a time; parse turns a line into a record or
// skips it. Errors name the line, counted from 1.
func readLines(r io.Reader, d Defaults, now time.Time, parse func([]byte) (rec record, skip bool, err error)) ([]mitigation.Mitigation, error) {
	var out []mitigation.Mitigation
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		rec, skip, err := parse(sc.Bytes())
		if skip {
			continue
		}
		var m mitigation.Mitigation
		if err == nil {
			m, err = rec.mitigation(d, now)
		}
		if err != nil {
			return nil, fmt.Errorf("bulk: line %d: %w", line, err)
		}
		if out = append(out, m); len(out) > MaxRecords {
			return nil, fmt.Errorf("bulk: line %d: more than %d records", line, MaxRecords)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bulk: %w", err)
	}
	return out, nil
}

func readCSV(r io.Reader, d Defaults, now time.Time) ([]mitigation.Mitigation, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0
	cr.ReuseRecord = true
	cr.Comment = '#'
	head, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bulk: csv header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(h))
		known := false
		for _, c := range CSVColumns {
			known = known || c == h
		}
		if !known && h != "reason" {
			return nil, fmt.Errorf("bulk: csv line 1: unknown column %q; accepted: %s, reason", h, strings.Join(CSVColumns, ", "))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("bulk: csv line 1: column %q twice", h)
		}
		col[h] = i
	}
	_, hasScope := col["scope"]
	_, hasValue := col["value"]
	if !hasScope && !hasValue {
		return nil, errors.New("bulk: csv line 1: want a scope or a value column")
	}
	var out []mitigation.Mitigation
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bulk: csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(row) {
				return strings.TrimSpace(row[i])
			}
			return ""
		}
		rec := record{Rule: get("rule"), Action: get("action"), Characteristic: get("characteristic"), Value: get("value"),
			Expires: get("expires"), Duration: get("duration"), Reason: get("reason")}
		if s := get("scope"); s != "" {
			if err := json.Unmarshal([]byte(s), &rec.Scope); err != nil {
				return nil, fmt.Errorf("bulk: csv line %d: scope: want a JSON object such as {\"ip.src\":\"203.0.113.7\"}: %w", line, err)
			}
		}
		m, err := rec.mitigation(d, now)
		if err != nil {
			return nil, fmt.Errorf("bulk: csv line %d: %w", line, err)
		}
		if out = append(out, m); len(out) > MaxRecords {
			return nil, fmt.Errorf("bulk: csv line %d: more than %d records", line, MaxRecords)
		}
	}
}

func readList(r io.Reader, d Defaults, now time.Time) ([]mitigation.Mitigation, error) {
	return readLines(r, d, now, func(b []byte) (record, bool, error) {
		s := string(b)
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		return record{Value: s}, s == "", nil
	})
}

// mitigation turns rec into a canonical Mitigation.
func (rec record) mitigation(d Defaults, now time.Time) (mitigation.Mitigation, error) {
	m := mitigation.Mitigation{Rule: rec.Rule, Action: d.Action, Origin: mitigation.OriginAPI}
	// Exports are JSON, which would write invalid bytes as U+FFFD: a
	// name that could not be read back as it was is refused here.
	if !utf8.ValidString(rec.Rule) {
		return m, fmt.Errorf("rule %q: not valid UTF-8", rec.Rule)
	}
	if !utf8.ValidString(rec.Reason) {
		return m, fmt.Errorf("reason %q: not valid UTF-8", rec.Reason)
	}
	if m.Rule == "" {
		m.Rule = d.Rule
	}
	if rec.Reason != "" {
		m.Rule += ": " + rec.Reason
	}
	if rec.Action != "" {
		a, err := mitigation.ParseAction(rec.Action)
		if err != nil {
			return m, err
		}
		m.Action = a
	}
	switch {
	case len(rec.Scope) > 0 && rec.Value != "":
		return m, errors.New("both scope and value: give one")
	case len(rec.Scope) > 0:
		m.Scope = rec.Scope
	case rec.Value != "":
		name := rec.Characteristic
		if name == "" {
			name = "ip.src"
			if strings.Contains(rec.Value, "/") {
				name = "ip.src.prefix"
			}
		}
		m.Scope = mitigation.Scope{{Name: name, Value: rec.Value}}
	default:
		return m, errors.New(`no scope: want "scope" (a JSON object) or "value" (an address or CIDR)`)
	}
	if m.Scope[0].Name == "ip.src.prefix" {
		if _, err := netip.ParsePrefix(m.Scope[0].Value); err != nil {
			return m, fmt.Errorf("value %q: want an address or a CIDR", m.Scope[0].Value)
		}
	} else if m.Scope[0].Name == "ip.src" && len(m.Scope) == 1 {
		if _, err := netip.ParseAddr(m.Scope[0].Value); err != nil {
			return m, fmt.Errorf("value %q: want an address or a CIDR", m.Scope[0].Value)
		}
	}
	sc, err := mitigation.Canonical(m.Scope)
	if err != nil {
		return m, err
	}
	m.Scope = sc
	switch {
	case rec.Expires != "":
		t, err := time.Parse(time.RFC3339Nano, rec.Expires)
		if err != nil {
			return m, fmt.Errorf("expires %q: want an RFC 3339 time such as 2026-11-25T18:00:00Z", rec.Expires)
		}
		m.Expires = t
	case rec.Duration != "":
		dur, err := time.ParseDuration(rec.Duration)
		if err != nil || dur <= 0 {
			return m, fmt.Errorf("duration %q: want a positive Go duration such as 30m or 24h", rec.Duration)
		}
		m.Expires = now.Add(dur)
	case d.Duration > 0:
		m.Expires = now.Add(d.Duration)
	default:
		return m, errors.New("no expires or duration, and no default duration")
	}
	if !m.Expires.After(now) {
		return m, fmt.Errorf("expires %s is not after now", m.Expires.UTC().Format(time.RFC3339))
	}
	return m, nil
}

// Write writes ms in format f. A List holds only the single-address and
// single-prefix scopes (others are counted in skipped); the other formats
// hold everything.
func Write(w io.Writer, f Format, ms []mitigation.Mitigation) (skipped int, err error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	switch f {
	case JSONLines:
		enc := json.NewEncoder(bw)
		for i := range ms {
			if err := enc.Encode(&ms[i]); err != nil {
				return 0, fmt.Errorf("bulk: %w", err)
			}
		}
	case CSV:
		cw := csv.NewWriter(bw)
		cw.Write([]string{"id", "rule", "action", "scope", "created", "expires", "origin"})
		for _, m := range ms {
			sc, _ := json.Marshal(m.Scope)
			cw.Write([]string{fmt.Sprint(m.ID), m.Rule, m.Action.String(), string(sc),
				m.Created.UTC().Format(time.RFC3339Nano), m.Expires.UTC().Format(time.RFC3339Nano), string(m.Origin)})
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return 0, fmt.Errorf("bulk: %w", err)
		}
	case List:
		for _, m := range ms {
			if len(m.Scope) != 1 || (m.Scope[0].Name != "ip.src" && m.Scope[0].Name != "ip.src.prefix") {
				skipped++
				continue
			}
			bw.WriteString(m.Scope[0].Value)
			bw.WriteByte('\n')
		}
	default:
		return 0, fmt.Errorf("bulk: unknown format %d", f)
	}
	if err := bw.Flush(); err != nil {
		return skipped, fmt.Errorf("bulk: %w", err)
	}
	return skipped, nil
}

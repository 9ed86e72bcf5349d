package mitigation

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

const maxFuzzInput = 64 << 10

func fuzzSeeds(f *testing.F) {
	b, err := appendRecord(nil, record{Op: opAdd, m: Mitigation{ID: 7, Rule: "login", Action: ActionShadowBan,
		Scope:   Scope{{Name: `http.cookies["s"]`, Value: "a\"b c"}, {Name: "ip.src.prefix", Value: "2001:db8::/64"}},
		Created: t0, Expires: t0.Add(time.Hour), Origin: "api"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.TrimSpace(b))
	f.Add([]byte(`{"op":"del","id":3}`))
	f.Add([]byte(`{"op":"meta","version":1,"next_id":9}`))
	f.Add([]byte(`{"op":"add","id":1,"rule":"r","action":"block","scope":{"ip.src":"192.0.2.1"},"created":"2026-11-22T10:00:00+01:00","expires":"2026-11-22T11:00:00Z","origin":"rule"}`))
	f.Add([]byte(`{"op":"add","id":1,"scope":{"ip.src":"::ffff:192.0.2.1"}}`))
	f.Add([]byte(`{"op":"add","id":1,"rule":"r","action":"log","scope":{"ip.src":"192.0.2.1"},"created":"0000-01-01T00:00:00+01:00","expires":"9999-12-31T23:59:59-01:00","origin":"rule"}`))
	f.Add([]byte(`{"op":"del","id":1} {}`))
	b, err = appendRecord(nil, record{Op: opAdd, m: Mitigation{ID: 8, Rule: "r", Scope: Scope{{Name: `http.cookies["s"]`, Value: "\xff"}}, Created: t0, Expires: t0, Origin: "rule"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.TrimSpace(b))
	f.Add([]byte("{\"op\":\"del\",\"id\":1}\n{\"op\":\"a"))
}

// FuzzDecodeRecord: no panic, and whatever decodes re-encodes to a line that
// decodes to the same record.
func FuzzDecodeRecord(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > maxFuzzInput {
			return
		}
		r, err := decodeRecord(line)
		if err != nil {
			return
		}
		b, err := appendRecord(nil, r)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode %+v: %v", line, r, err)
		}
		r2, err := decodeRecord(bytes.TrimSuffix(b, []byte("\n")))
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", b, err)
		}
		if !sameRecord(r, r2) {
			t.Fatalf("round trip %+v != %+v", r, r2)
		}
		if r.Op == opAdd && !json.Valid(b) {
			t.Fatalf("invalid JSON %q", b)
		}
	})
}

// FuzzDecodeStream: no panic on whole files; a stream that loads strictly
// also loads tolerantly, to the same records.
func FuzzDecodeStream(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		var strict, tolerant []record
		resStrict, errStrict := decodeStream(bytes.NewReader(data), "f", false, func(r record) { strict = append(strict, r) })
		res, errTol := decodeStream(bytes.NewReader(data), "f", true, func(r record) { tolerant = append(tolerant, r) })
		if at := res.truncatedAt; at >= int64(len(data)) {
			t.Fatalf("truncation offset %d beyond %d bytes", at, len(data))
		}
		if (resStrict.bad == 0) != (resStrict.firstBad == nil) || (res.bad == 0) != (res.firstBad == nil) {
			t.Fatalf("bad lines %d/%d with first error %v/%v", resStrict.bad, res.bad, resStrict.firstBad, res.firstBad)
		}
		if errStrict == nil && resStrict.bad == 0 {
			if errTol != nil || res.truncatedAt >= 0 || res.bad != 0 || len(strict) != len(tolerant) {
				t.Fatalf("strict load clean with %d records; tolerant: %v, %+v, %d records", len(strict), errTol, res, len(tolerant))
			}
		}
		st := loadState{live: map[uint64]Mitigation{}, nextID: 1}
		for _, r := range tolerant {
			st.apply(r)
		}
	})
}

func sameRecord(a, b record) bool {
	return a.Op == b.Op && a.NextID == b.NextID && a.m.ID == b.m.ID && a.m.Rule == b.m.Rule &&
		a.m.Action == b.m.Action && a.m.Scope.Equal(b.m.Scope) && a.m.Created.Equal(b.m.Created) &&
		a.m.Expires.Equal(b.m.Expires) && a.m.Origin == b.m.Origin
}

package mitigation

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/action"
	"github.com/guardd/guardd/characteristics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0 }
	}
	s, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ipScope(ip string) Scope { return Scope{{Name: "ip.src", Value: ip}} }

func mit(rule string, a Action, sc Scope, ttl time.Duration) Mitigation {
	return Mitigation{Rule: rule, Action: a, Scope: sc, Expires: t0.Add(ttl)}
}

func mustAdd(t testing.TB, s *Store, m Mitigation, now time.Time) Mitigation {
	t.Helper()
	got, ok, err := s.Add(m, now)
	if err != nil || !ok {
		t.Fatalf("Add(%s %s): ok=%v err=%v", m.Rule, m.Scope, ok, err)
	}
	return got
}

func TestAddLookup(t *testing.T) {
	s := newStore(t, Config{})
	m := mustAdd(t, s, mit("login", ActionBlock, ipScope("::ffff:203.0.113.7"), 10*time.Minute), t0)
	if m.ID != 1 || m.Origin != "rule" || !m.Created.Equal(t0) || !m.Scope.Equal(ipScope("203.0.113.7")) {
		t.Fatalf("Add returned %+v", m)
	}
	key := ipScope("203.0.113.7").Key()
	for _, tc := range []struct {
		name string
		key  uint64
		now  time.Time
		want bool
	}{
		{"hit", key, t0, true},
		{"hit just before expiry", key, t0.Add(10*time.Minute - 1), true},
		{"miss at expiry", key, t0.Add(10 * time.Minute), false},
		{"other key", ipScope("203.0.113.8").Key(), t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := s.Lookup(tc.key, tc.now)
			if ok != tc.want {
				t.Fatalf("Lookup ok = %v, want %v", ok, tc.want)
			}
			if ok && got.ID != m.ID {
				t.Errorf("Lookup = %+v, want ID %d", got, m.ID)
			}
		})
	}
}

func TestAddExtendsAndStacks(t *testing.T) {
	s := newStore(t, Config{})
	sc := ipScope("198.51.100.1")
	key := sc.Key()
	first := mustAdd(t, s, mit("r1", ActionRateLimit, sc, 10*time.Minute), t0)

	steps := []struct {
		name        string
		m           Mitigation
		wantID      uint64
		wantExpires time.Duration // after t0, of the returned mitigation
		wantLookup  Action
		wantLen     int
	}{
		{"later expiry extends", mit("r1", ActionRateLimit, sc, 20*time.Minute), first.ID, 20 * time.Minute, ActionRateLimit, 1},
		{"earlier expiry keeps", mit("r1", ActionRateLimit, sc, 5*time.Minute), first.ID, 20 * time.Minute, ActionRateLimit, 1},
		{"new action replaces", mit("r1", ActionShadowBan, sc, 5*time.Minute), first.ID, 20 * time.Minute, ActionShadowBan, 1},
		{"other rule stacks, block wins", mit("r2", ActionBlock, sc, 1*time.Minute), 2, 1 * time.Minute, ActionBlock, 2},
		{"log does not win", mit("r3", ActionLog, sc, 60*time.Minute), 3, 60 * time.Minute, ActionBlock, 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got := mustAdd(t, s, st.m, t0)
			if got.ID != st.wantID || !got.Expires.Equal(t0.Add(st.wantExpires)) {
				t.Errorf("Add = ID %d expires %s, want ID %d expires +%s", got.ID, got.Expires, st.wantID, st.wantExpires)
			}
			if l, ok := s.Lookup(key, t0); !ok || l.Action != st.wantLookup {
				t.Errorf("Lookup = %v %v, want %v", l.Action, ok, st.wantLookup)
			}
			if s.Len() != st.wantLen {
				t.Errorf("Len = %d, want %d", s.Len(), st.wantLen)
			}
		})
	}
	// Once the block expires, the shadowban of r1 is the strongest left.
	if l, ok := s.Lookup(key, t0.Add(2*time.Minute)); !ok || l.Action != ActionShadowBan {
		t.Errorf("Lookup after the block expired = %v %v, want shadowban", l.Action, ok)
	}
}

func TestStackedRemoval(t *testing.T) {
	for _, order := range [][3]int{{0, 1, 2}, {1, 0, 2}, {2, 1, 0}, {0, 2, 1}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s := newStore(t, Config{})
			sc := ipScope("198.51.100.1")
			var ms [3]Mitigation
			for i, a := range []Action{ActionRateLimit, ActionBlock, ActionShadowBan} {
				ms[i] = mustAdd(t, s, mit(fmt.Sprint("r", i), a, sc, time.Duration(i+1)*time.Minute), t0)
			}
			left := map[int]bool{0: true, 1: true, 2: true}
			for _, i := range order {
				if !s.Delete(ms[i].ID) {
					t.Fatalf("Delete(%d) = false", ms[i].ID)
				}
				delete(left, i)
				// The strongest of those left: block (1) > shadowban (2) > rate_limit (0).
				want, any := -1, false
				for _, j := range []int{1, 2, 0} {
					if left[j] {
						want, any = j, true
						break
					}
				}
				got, ok := s.Lookup(sc.Key(), t0)
				if ok != any || (ok && got.ID != ms[want].ID) {
					t.Fatalf("after deleting %d: Lookup = %d %v, want %v", i, got.ID, ok, want)
				}
				// The others can still be extended in place.
				for j := range left {
					if m := mustAdd(t, s, mit(fmt.Sprint("r", j), ms[j].Action, sc, time.Hour), t0); m.ID != ms[j].ID {
						t.Fatalf("re-add of r%d got ID %d, want %d", j, m.ID, ms[j].ID)
					}
				}
			}
			if s.Len() != 0 || len(s.Shapes()) != 0 {
				t.Errorf("Len = %d, Shapes = %v after deleting all", s.Len(), s.Shapes())
			}
			if _, ok := s.Lookup(sc.Key(), t0); ok {
				t.Error("Lookup hit after deleting all")
			}
		})
	}
}

func TestAddErrors(t *testing.T) {
	s := newStore(t, Config{})
	for _, tc := range []struct {
		name    string
		m       Mitigation
		wantErr string
	}{
		{"bad action", Mitigation{Rule: "r", Action: 9, Scope: ipScope("192.0.2.1"), Expires: t0.Add(time.Minute)}, "invalid action"},
		{"no rule", Mitigation{Action: ActionBlock, Scope: ipScope("192.0.2.1"), Expires: t0.Add(time.Minute)}, "no rule"},
		{"no expiry", Mitigation{Rule: "r", Scope: ipScope("192.0.2.1")}, "not after now"},
		{"expired", mit("r", ActionBlock, ipScope("192.0.2.1"), -time.Second), "not after now"},
		{"expires now", mit("r", ActionBlock, ipScope("192.0.2.1"), 0), "not after now"},
		{"far future", Mitigation{Rule: "r", Scope: ipScope("192.0.2.1"), Expires: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "9999"},
		{"bad scope", mit("r", ActionBlock, ipScope("192.0.2"), time.Minute), "ip.src"},
		{"empty scope", mit("r", ActionBlock, nil, time.Minute), "empty scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, err := s.Add(tc.m, t0)
			if err == nil || ok || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Add: ok=%v err=%v, want %q", ok, err, tc.wantErr)
			}
		})
	}
	if s.Len() != 0 {
		t.Errorf("Len = %d after refused adds", s.Len())
	}
	// Manual mitigations need no rule name.
	if _, ok, err := s.Add(Mitigation{Origin: "api", Action: ActionBlock, Scope: ipScope("192.0.2.1"), Expires: t0.Add(time.Minute)}, t0); !ok || err != nil {
		t.Errorf("manual Add: ok=%v err=%v", ok, err)
	}
}

func TestAddCopiesScope(t *testing.T) {
	s := newStore(t, Config{})
	buf := []byte("abc")
	sc := Scope{{Name: `http.cookies["s"]`, Value: string(buf)}}
	m := mustAdd(t, s, mit("r", ActionBlock, sc, time.Minute), t0)
	sc[0].Value = "xyz"
	if m.Scope[0].Value != "abc" {
		t.Fatal("stored scope aliases the caller's")
	}
}

func TestAllowlistedAdd(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{Allowlist: Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []Scope{ipScope("192.0.2.9"), ipScope("::ffff:192.0.2.9"), {{Name: "ip.src.prefix", Value: "192.0.0.0/16"}}} {
		m, ok, err := s.Add(mit("r", ActionBlock, sc, time.Minute), t0)
		if ok || err != nil || m.ID != 0 {
			t.Errorf("Add(%s) = %+v, %v, %v; want refused", sc, m, ok, err)
		}
	}
	if s.Len() != 0 {
		t.Errorf("Len = %d", s.Len())
	}
	if got := value(s.met.allowlisted); got != 3 {
		t.Errorf("allowlisted_total = %v, want 3", got)
	}
}

func TestExpire(t *testing.T) {
	s := newStore(t, Config{})
	for i, ttl := range []time.Duration{3, 1, 2, 2} {
		mustAdd(t, s, mit("r", ActionBlock, ipScope(fmt.Sprintf("192.0.2.%d", i)), ttl*time.Minute), t0)
	}
	for _, st := range []struct {
		at        time.Duration
		wantN     int
		wantLen   int
		wantListN int
	}{
		{0, 0, 4, 4},
		{time.Minute - 1, 0, 4, 4},
		{time.Minute, 1, 3, 3},
		{2 * time.Minute, 2, 1, 1},
		{time.Hour, 1, 0, 0},
		{2 * time.Hour, 0, 0, 0},
	} {
		t.Run(st.at.String(), func(t *testing.T) {
			now := t0.Add(st.at)
			if n := s.Expire(now); n != st.wantN {
				t.Errorf("Expire = %d, want %d", n, st.wantN)
			}
			if s.Len() != st.wantLen || len(s.List(now)) != st.wantListN {
				t.Errorf("Len = %d, List = %d, want %d, %d", s.Len(), len(s.List(now)), st.wantLen, st.wantListN)
			}
		})
	}
	if got := value(s.met.active[ActionBlock]); got != 0 {
		t.Errorf("active gauge = %v after everything expired", got)
	}
}

func TestEvictionAtCap(t *testing.T) {
	s := newStore(t, Config{MaxEntries: 3})
	a := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), 10*time.Minute), t0)
	b := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.2"), 5*time.Minute), t0)
	c := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.3"), 20*time.Minute), t0)

	// Extending an existing mitigation at the cap evicts nothing.
	mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), 30*time.Minute), t0)
	if got := value(s.met.evictions); got != 0 {
		t.Fatalf("evictions = %v after an extension", got)
	}
	// A new scope evicts the one nearest to expiry: b.
	d := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.4"), 15*time.Minute), t0)
	if _, ok := s.Lookup(b.Scope.Key(), t0); ok {
		t.Error("b (nearest to expiry) still held")
	}
	for _, m := range []Mitigation{a, c, d} {
		if _, ok := s.Lookup(m.Scope.Key(), t0); !ok {
			t.Errorf("%s evicted", m.Scope)
		}
	}
	if s.Len() != 3 || value(s.met.evictions) != 1 {
		t.Errorf("Len = %d, evictions = %v; want 3, 1", s.Len(), value(s.met.evictions))
	}
	// An expired entry makes room without counting as an eviction.
	later := t0.Add(16 * time.Minute) // d has expired
	mustAdd(t, s, Mitigation{Rule: "r", Scope: ipScope("192.0.2.5"), Expires: later.Add(time.Minute)}, later)
	if got := value(s.met.evictions); got != 1 {
		t.Errorf("evictions = %v, want 1 (an expired entry is not evicted)", got)
	}
}

func TestDelete(t *testing.T) {
	s := newStore(t, Config{})
	m := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), time.Minute), t0)
	if !s.Delete(m.ID) {
		t.Fatal("Delete of a held ID = false")
	}
	if s.Delete(m.ID) {
		t.Error("second Delete = true")
	}
	if _, ok := s.Lookup(m.Scope.Key(), t0); ok || s.Len() != 0 {
		t.Error("deleted mitigation still held")
	}
	// A new Add after a delete gets a new ID.
	if n := mustAdd(t, s, m, t0); n.ID == m.ID {
		t.Errorf("ID %d reused", n.ID)
	}
}

func TestShapes(t *testing.T) {
	s := newStore(t, Config{})
	if len(s.Shapes()) != 0 {
		t.Fatal("shapes of an empty store")
	}
	a := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), time.Minute), t0)
	b := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.2"), time.Minute), t0)
	c := mustAdd(t, s, mit("r", ActionBlock, Scope{{Name: `http.cookies["s"]`, Value: "x"}, {Name: "http.path", Value: "/login"}}, time.Minute), t0)
	want := [][]string{{`http.cookies["s"]`, "http.path"}, {"ip.src"}}
	names := func() [][]string {
		var out [][]string
		for _, sh := range s.Shapes() {
			out = append(out, sh.Names)
		}
		return out
	}
	if got := names(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Shapes = %q, want %q", got, want)
	}
	s.Delete(a.ID)
	if got := names(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Shapes after one of two ip.src deleted = %q", got)
	}
	// Shape.Key computes Scope.Key from an event, allocation-free.
	ev := &characteristics.Event{IP: netip.MustParseAddr("192.0.2.2"), Path: "/login", Cookies: []characteristics.Field{{Name: "s", Value: "x"}}}
	buf := make([]byte, 0, 64)
	for _, sh := range s.Shapes() {
		var k uint64
		var ok bool
		k, buf, ok = sh.Key(ev, buf)
		if m, hit := s.Lookup(k, t0); !ok || !hit || (m.ID != b.ID && m.ID != c.ID) {
			t.Errorf("shape %q: key ok %v, Lookup %v %d", sh.Names, ok, hit, m.ID)
		}
		if n := testing.AllocsPerRun(100, func() { _, buf, _ = sh.Key(ev, buf) }); n != 0 {
			t.Errorf("Shape.Key allocates %v", n)
		}
	}
	if _, _, ok := s.Shapes()[0].Key(&characteristics.Event{Path: "/login"}, buf); ok {
		t.Error("Shape.Key ok for an event without the cookie")
	}
	if _, _, ok := (Shape{Names: []string{"ip.src"}, Characteristics: []characteristics.Characteristic{characteristics.MustParse("ip.src")}}).Key(ev, buf); ok {
		t.Error("Shape.Key ok for a shape not made by NewShape")
	}
	s.Delete(b.ID)
	s.Delete(c.ID)
	if got := s.Shapes(); len(got) != 0 {
		t.Errorf("Shapes after all deleted = %d", len(got))
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Shapes() }); n != 0 {
		t.Errorf("Shapes allocates %v", n)
	}
}

func TestShapeKey(t *testing.T) {
	long := strings.Repeat("v", 200) // a two-byte length
	ev := &characteristics.Event{IP: netip.MustParseAddr("2001:db8::7"), Path: "/" + long, Status: 401,
		Headers: []characteristics.Field{{Name: "x-api-key", Value: "k"}}}
	for _, tc := range []struct {
		names []string
		scope Scope
	}{
		{[]string{"ip.src"}, Scope{{Name: "ip.src", Value: "2001:db8::7"}}},
		{[]string{"http.path", "ip.src"}, Scope{{Name: "http.path", Value: "/" + long}, {Name: "ip.src", Value: "2001:db8::7"}}},
		{[]string{`http.headers["X-Api-Key"]`, "http.status"}, Scope{{Name: `http.headers["x-api-key"]`, Value: "k"}, {Name: "http.status", Value: "401"}}},
	} {
		t.Run(strings.Join(tc.names, ","), func(t *testing.T) {
			sh, err := NewShape(tc.names)
			if err != nil {
				t.Fatal(err)
			}
			for _, buf := range [][]byte{nil, make([]byte, 0, 4), make([]byte, 0, 1024)} {
				k, _, ok := sh.Key(ev, buf)
				if !ok || k != tc.scope.Key() {
					t.Errorf("Key = %#x %v, want %#x (Scope.Key of %s)", k, ok, tc.scope.Key(), tc.scope)
				}
			}
		})
	}
	if _, err := NewShape([]string{"ip.dst"}); err == nil {
		t.Error("NewShape of an unknown name: no error")
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, mit("r", ActionRateLimit, ipScope("192.0.2.1"), time.Minute), t0)
	mustAdd(t, s, mit("r", ActionRateLimit, ipScope("192.0.2.2"), time.Minute), t0)
	mustAdd(t, s, mit("r", ActionRateLimit, ipScope("192.0.2.2"), 2*time.Minute), t0) // an extension: not added
	got := gather(t, reg)
	for name, want := range map[string]float64{
		`guardd_mitigation_added_total{action="rate_limit"}`: 2,
		`guardd_mitigation_added_total{action="block"}`:      0,
		`guardd_mitigation_active{action="rate_limit"}`:      2,
		`guardd_mitigation_active{action="firewall"}`:        0,
		`guardd_mitigation_evictions_total`:                  0,
		`guardd_mitigation_allowlisted_total`:                0,
		`guardd_mitigation_journal_errors_total`:             0,
		`guardd_mitigation_state_files_set_aside_total`:      0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if len(got) != 2*(action.Len-1)+4 { // throttle is never a record
		t.Errorf("%d series, want %d: %v", len(got), 2*(action.Len-1)+4, got)
	}
	if _, err := New(Config{}, reg, nil); err == nil {
		t.Error("second New on one registry did not report the duplicate registration")
	}
}

func TestLookupAllocs(t *testing.T) {
	s := newStore(t, Config{})
	m := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), time.Minute), t0)
	hit, miss := m.Scope.Key(), ipScope("192.0.2.2").Key()
	if n := testing.AllocsPerRun(1000, func() {
		s.Lookup(hit, t0)
		s.Lookup(miss, t0)
	}); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

// TestConcurrent runs writers against readers; run it with -race.
func TestConcurrent(t *testing.T) {
	s := newStore(t, Config{MaxEntries: 500})
	const n = 2000
	scopes := make([]Scope, n)
	keys := make([]uint64, n)
	for i := range scopes {
		scopes[i] = ipScope(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String())
		keys[i] = scopes[i].Key()
	}
	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		writers.Go(func() {
			for i := range n {
				now := t0.Add(time.Duration(i) * time.Millisecond)
				m, ok, err := s.Add(Mitigation{Rule: fmt.Sprint("r", w), Action: Action(i % int(ActionThrottle)), Scope: scopes[i], Expires: now.Add(time.Duration(i%50+1) * time.Second)}, now)
				if err != nil || !ok {
					t.Errorf("Add: %v %v", ok, err)
					return
				}
				if i%7 == 0 {
					s.Delete(m.ID)
				}
				if i%100 == 0 {
					s.Expire(now)
					s.Changes(0)
					s.List(now)
				}
			}
		})
	}
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i, k := range keys {
					if m, ok := s.Lookup(k, t0); ok && !m.Scope.Equal(scopes[i]) {
						t.Errorf("Lookup(%s) = %s", scopes[i], m.Scope)
						return
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if s.Len() > 500 {
		t.Errorf("Len = %d over the cap", s.Len())
	}
	l := s.List(t0.Add(time.Hour))
	if len(l) != 0 {
		t.Errorf("%d mitigations outlive every expiry", len(l))
	}
}

// value reads a counter or gauge.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// gather returns every series of reg as name{labels} -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%q}", l.GetName(), l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[name] = v
		}
	}
	return out
}

// TestPrefixAnyLength: a prefix scope of any length, IPv4 or IPv6, covers
// the addresses inside it, whatever prefix the event was enriched with.
func TestPrefixAnyLength(t *testing.T) {
	for _, tc := range []struct {
		ban     string
		in, out []string
	}{
		{"198.18.0.0/16", []string{"198.18.0.1", "198.18.255.254", "::ffff:198.18.7.7"}, []string{"198.19.0.1", "2001:db8::1"}},
		{"198.51.100.128/25", []string{"198.51.100.200"}, []string{"198.51.100.127"}},
		{"192.0.2.0/24", []string{"192.0.2.9"}, []string{"192.0.3.9"}},
		{"203.0.113.7/32", []string{"203.0.113.7"}, []string{"203.0.113.8"}},
		{"0.0.0.0/0", []string{"192.0.2.1"}, []string{"2001:db8::1"}},
		{"2001:db8::/32", []string{"2001:db8:ffff::1", "2001:db8::"}, []string{"2001:db9::1", "198.18.0.1"}},
		{"2001:db8:1:2::/64", []string{"2001:db8:1:2::99"}, []string{"2001:db8:1:3::99"}},
		{"2001:db8:1:2:3::/80", []string{"2001:db8:1:2:3::1"}, []string{"2001:db8:1:2:4::1"}},
		{"2001:db8::1/128", []string{"2001:db8::1"}, []string{"2001:db8::2"}},
	} {
		t.Run(tc.ban, func(t *testing.T) {
			s := newStore(t, Config{})
			want := mustAdd(t, s, Mitigation{Rule: "manual", Origin: "manual", Action: ActionBlock,
				Scope: Scope{{Name: "ip.src.prefix", Value: tc.ban}}, Expires: t0.Add(time.Hour)}, t0)
			// A rule's /24 (or /64) of another network: its own shape.
			mustAdd(t, s, mit("r", ActionRateLimit, Scope{{Name: "ip.src.prefix", Value: "10.9.8.0/24"}}, time.Hour), t0)
			match := func(ip string) bool {
				a := netip.MustParseAddr(ip)
				bits := 24
				if a.Unmap().Is6() {
					bits = 64
				}
				// The event's own prefix is what the enricher set: not the ban's.
				pfx, _ := a.Unmap().Prefix(bits)
				ev := &characteristics.Event{IP: a, Prefix: pfx}
				buf := make([]byte, 0, 64)
				for _, sh := range s.Shapes() {
					var k uint64
					var ok bool
					if k, buf, ok = sh.Key(ev, buf); !ok {
						continue
					}
					if m, hit := s.Lookup(k, t0); hit && m.ID == want.ID {
						return true
					}
				}
				return false
			}
			for _, ip := range tc.in {
				if !match(ip) {
					t.Errorf("%s not covered by %s", ip, tc.ban)
				}
			}
			for _, ip := range tc.out {
				if match(ip) {
					t.Errorf("%s covered by %s", ip, tc.ban)
				}
			}
		})
	}
}

func TestAddAll(t *testing.T) {
	s := newStore(t, Config{Allowlist: Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}})
	mustAdd(t, s, mit("manual", ActionBlock, ipScope("203.0.113.9"), time.Minute), t0)
	held, allowed, err := s.AddAll([]Mitigation{
		mit("manual", ActionBlock, ipScope("203.0.113.7"), time.Hour),
		mit("manual", ActionBlock, ipScope("192.0.2.1"), time.Hour),   // allowlisted
		mit("manual", ActionBlock, ipScope("203.0.113.9"), time.Hour), // extends
	}, t0)
	if err != nil || allowed != 1 || len(held) != 2 {
		t.Fatalf("AddAll = %v, %d, %v", held, allowed, err)
	}
	if held[0].ID != 2 || held[1].ID != 1 || !held[1].Expires.Equal(t0.Add(time.Hour)) || s.Len() != 2 {
		t.Errorf("held %+v, Len %d", held, s.Len())
	}
	// One bad entry adds nothing and names its position.
	_, _, err = s.AddAll([]Mitigation{
		mit("manual", ActionBlock, ipScope("203.0.113.10"), time.Hour),
		mit("manual", ActionBlock, ipScope("not an address"), time.Hour),
	}, t0)
	if err == nil || !strings.Contains(err.Error(), "#2") || s.Len() != 2 {
		t.Errorf("AddAll with a bad entry: err %v, Len %d", err, s.Len())
	}
}

// TestPrefixFilter: the per-shape filter follows adds and deletes, so a
// prefix stays matched while another of its length comes and goes.
func TestPrefixFilter(t *testing.T) {
	s := newStore(t, Config{})
	matches := func(ip string) bool {
		ev := &characteristics.Event{IP: netip.MustParseAddr(ip)}
		for _, sh := range s.Shapes() {
			if k, _, ok := sh.Key(ev, nil); ok {
				if _, hit := s.Lookup(k, t0); hit {
					return true
				}
			}
		}
		return false
	}
	var ms []Mitigation
	for i := range 300 { // more than fit in distinct buckets by chance
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16)
		ms = append(ms, mustAdd(t, s, mit("manual", ActionBlock, Scope{{Name: "ip.src.prefix", Value: p.String()}}, time.Hour), t0))
	}
	for i, m := range ms {
		if i%2 == 0 {
			s.Delete(m.ID)
		}
	}
	for i := range 300 {
		ip := netip.AddrFrom4([4]byte{10, byte(i), 9, 9}).String()
		if got, want := matches(ip), i%2 == 1; got != want {
			t.Errorf("%s matched %v, want %v", ip, got, want)
		}
	}
	if matches("11.0.9.9") {
		t.Error("an address outside every ban matched")
	}
}

// TestTimesExact: the store keeps Created and Expires to the nanosecond and
// across the whole range Add accepts, though a node packs them.
func TestTimesExact(t *testing.T) {
	s := newStore(t, Config{})
	now := time.Date(2026, 11, 25, 18, 0, 0, 123456789, time.UTC)
	for i, exp := range []time.Time{
		now.Add(time.Nanosecond),
		now.Add(time.Hour + 987654321),
		time.Date(2500, 1, 1, 0, 0, 0, 1, time.UTC), // past int64 nanoseconds
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		m := mustAdd(t, s, Mitigation{Rule: "r", Action: ActionBlock, Scope: ipScope(fmt.Sprintf("192.0.2.%d", i)), Created: now, Expires: exp}, now)
		got, ok := s.Lookup(m.Scope.Key(), exp.Add(-time.Nanosecond))
		if !ok || got.Expires != exp || got.Created != now || m.Expires != exp {
			t.Errorf("expiry %s: Lookup %v %s created %s; Add gave %s", exp, ok, got.Expires, got.Created, m.Expires)
		}
		if _, ok := s.Lookup(m.Scope.Key(), exp); ok {
			t.Errorf("expiry %s: found at its expiry", exp)
		}
	}
}

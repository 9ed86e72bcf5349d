package sniff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/guardd/guardd/ingest/capture"
)

// manyConnections writes a capture of n connections from distinct client
// ports, each a handshake and a TLS ClientHello (one of a few SNIs) or, every
// seventh, an HTTP request, and returns its path.
func manyConnections(t *testing.T, n int) string {
	t.Helper()
	hellos := make([][]byte, 5)
	for i := range hellos {
		hellos[i] = clientHello(t, fmt.Sprintf("h%d.example.test", i))
	}
	path := filepath.Join(t.TempDir(), "many.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	at := epoch
	write := func(frame []byte) {
		at = at.Add(time.Millisecond)
		ci := gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(frame), Length: len(frame)}
		if err := w.WritePacket(ci, frame); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		c := endpoint{netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), uint16(20000 + i)}
		payload := hellos[i%len(hellos)]
		if i%7 == 0 {
			payload = fmt.Appendf(nil, "GET /%d HTTP/1.1\r\nHost: a.test\r\nUser-Agent: t\r\n\r\n", i)
		}
		write(tcpFrame(t, c, srv, fSYN, 1000, nil))
		write(tcpFrame(t, srv, c, fSYNACK, 5000, nil))
		write(tcpFrame(t, c, srv, fPSH, 1001, payload))
	}
	return path
}

// TestReadFileInOrder checks that ReadFile, which fingerprints hellos on
// workers, emits the records of a capture many batches long exactly as a
// Sniffer computing each fingerprint in line does, in the same order.
func TestReadFileInOrder(t *testing.T) {
	n := 3 * fpBatchRecords * fpBatchesInFlight / 2
	if testing.Short() {
		n = 3 * fpBatchRecords
	}
	path := manyConnections(t, n)

	var want []byte
	s, err := New(Config{}, func(r *Record) { want = append(r.AppendJSON(want), '\n') })
	if err != nil {
		t.Fatal(err)
	}
	src, err := capture.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var p capture.Packet
	for src.ReadPacket(&p) == nil {
		s.HandlePacket(&p)
	}
	if st := s.Stats(); st.TLS+st.HTTP != uint64(n) {
		t.Fatalf("inline Sniffer: %d tls + %d http records, want %d", st.TLS, st.HTTP, n)
	}

	got := jsonLines(t, path, Config{})
	if !bytes.Equal(got, want) {
		g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(g), len(w)) {
			if !bytes.Equal(g[i], w[i]) {
				t.Fatalf("line %d (of %d, want %d):\n got %s\nwant %s", i+1, len(g), len(w), g[i], w[i])
			}
		}
		t.Fatalf("ReadFile gave %d lines, want %d", len(g), len(w))
	}
}

func appendJSONLine(dst []byte, r *Record) []byte { return append(r.AppendJSON(dst), '\n') }

// TestFormatFile checks that FormatFile, which formats on the workers from
// fingerprint text it reuses, writes what ReadFile's records give, for a
// capture many batches long and for every ground-truth capture.
func TestFormatFile(t *testing.T) {
	paths := append([]string{manyConnections(t, 3*fpBatchRecords)}, captures(t)...)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := jsonLines(t, path, Config{})
			var got bytes.Buffer
			if _, err := FormatFile(path, Config{}, &got, appendJSONLine); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("FormatFile differs from ReadFile:\ngot:\n%.2000s\nwant:\n%.2000s", got.Bytes(), want)
			}
		})
	}
}

type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(b []byte) (int, error) {
	w.n++
	return 0, errDiskFull
}

// TestFormatFileWriteError: the first write error stops the writing and is
// returned once the file has been read.
func TestFormatFileWriteError(t *testing.T) {
	path := manyConnections(t, 3*fpBatchRecords)
	w := &failingWriter{}
	st, err := FormatFile(path, Config{}, w, appendJSONLine)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("FormatFile err = %v, want %v", err, errDiskFull)
	}
	if w.n != 1 {
		t.Errorf("%d writes after the error, want none", w.n-1)
	}
	if st.TLS+st.HTTP != uint64(3*fpBatchRecords) {
		t.Errorf("stats count %d records, want the whole file's %d", st.TLS+st.HTTP, 3*fpBatchRecords)
	}
}

// TestFormatFileReplacedField: a fingerprint the format func replaces is
// escaped, though the ones FormatFile made are copied as they are.
func TestFormatFileReplacedField(t *testing.T) {
	var out bytes.Buffer
	format := func(dst []byte, r *Record) []byte {
		if r.Proto == ProtoTLS {
			r.JA3 = "a\"b\\c"
		}
		return appendJSONLine(dst, r)
	}
	if _, err := FormatFile("testdata/tls13.pcap", Config{}, &out, format); err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range bytes.Lines(out.Bytes()) {
		var v map[string]any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if v["ja3"] != "a\"b\\c" || len(v["ja4_r"].(string)) < 20 {
			t.Errorf("ja3 %q ja4_r %q", v["ja3"], v["ja4_r"])
		}
		n++
	}
	if n == 0 {
		t.Fatal("no record")
	}
}

func TestInside(t *testing.T) {
	text := "t13d1516h2_8daaf6152771_e5627efa2ab1"
	copyOfPart := string([]byte(text[11:23]))
	for _, tt := range []struct {
		name string
		s, t string
		want bool
	}{
		{"part", text[11:23], text, true},
		{"whole", text, text, true},
		{"same bytes elsewhere", copyOfPart, text, false},
		{"overhangs", text[30:], text[:32], false},
		{"empty", "", text, false},
		{"no text", text, "", false},
	} {
		if got := inside(tt.s, tt.t); got != tt.want {
			t.Errorf("%s: inside = %v, want %v", tt.name, got, tt.want)
		}
	}
}

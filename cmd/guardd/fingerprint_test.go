package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sniffTestdata = "../../ingest/sniff/testdata/"

func TestFingerprintJSON(t *testing.T) {
	files := []string{sniffTestdata + "tls13.pcap", sniffTestdata + "http.pcap", sniffTestdata + "quic-v1.pcap"}
	var stdout, stderr bytes.Buffer
	if code := runFingerprint(append([]string{"--json"}, files...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var want []byte
	for _, f := range files {
		g, err := os.ReadFile(strings.TrimSuffix(f, ".pcap") + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, g...)
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("got\n%s\nwant (the goldens)\n%s", stdout.Bytes(), want)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Errorf("not JSON: %s", l)
		}
		for _, k := range []string{"proto", "frame", "src", "src_port", "dst", "dst_port"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q", l, k)
			}
		}
	}
}

func TestFingerprintFlags(t *testing.T) {
	tls13 := sniffTestdata + "tls13.pcap"
	missing := filepath.Join(t.TempDir(), "missing.pcap")
	notPcap := filepath.Join(t.TempDir(), "text.pcap")
	os.WriteFile(notPcap, []byte("this is not a capture file at all\n"), 0o644)
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs string
	}{
		{"table", []string{tls13}, 0, "PROTO  FRAME", ""},
		{"table row", []string{tls13}, 0, "example.test", ""},
		{"legacy alpn", []string{"--json", "--ja4-alpn=legacy", tls13}, 0, `"ja4":"t13d3111h2_`, ""},
		{"no ja4h", []string{"--json", "--no-ja4h", sniffTestdata + "ssdp.pcap"}, 0, `"ja4h":""`, ""},
		{"bad alpn mode", []string{"--ja4-alpn=x", tls13}, 2, "", "want spec or legacy"},
		{"no files", []string{"--json"}, 2, "", "usage"},
		{"missing file", []string{"--json", missing, tls13}, 1, `"proto":"tls"`, "missing.pcap"},
		{"not a capture", []string{notPcap}, 1, "", "text.pcap"},
		{"help", []string{"-h"}, 0, "usage", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runFingerprint(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %s)", code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.errs) {
				t.Errorf("stderr lacks %q:\n%s", tc.errs, stderr.String())
			}
		})
	}
}

package sniff

import (
	"errors"
	"fmt"
	"io"

	"github.com/guardd/guardd/ingest/capture"
)

// ReadFile runs one pcap or pcapng file through a new Sniffer, calling emit for
// each record in capture order. Frame numbers start at 1 in each file. A file
// cut short inside a packet ends there without an error (Stats.Truncated),
// as with tshark; other read errors are returned after the records before
// them were emitted.
func ReadFile(path string, cfg Config, emit func(*Record)) (Stats, error) {
	s, err := New(cfg, emit)
	if err != nil {
		return Stats{}, err
	}
	src, err := capture.OpenFile(path)
	if err != nil {
		return Stats{}, fmt.Errorf("sniff: %w", err)
	}
	defer src.Close()
	var p capture.Packet
	for {
		err := src.ReadPacket(&p)
		if err != nil {
			s.Close()
			st := s.Stats()
			if errors.Is(err, io.EOF) {
				return st, nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				st.Truncated = true
				return st, nil
			}
			return st, fmt.Errorf("sniff: %w", err)
		}
		s.HandlePacket(&p)
	}
}

// ReadFiles runs each file through ReadFile in turn (replay --pcap) and stops
// at the first error.
func ReadFiles(paths []string, cfg Config, emit func(*Record)) error {
	for _, path := range paths {
		if _, err := ReadFile(path, cfg, emit); err != nil {
			return err
		}
	}
	return nil
}

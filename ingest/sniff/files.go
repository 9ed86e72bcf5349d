package sniff

import (
	"errors"
	"fmt"
	"io"

	"github.com/guardd/guardd/ingest/capture"
)

// Read-ahead of ReadFile: batches of packets copied out of the reader's
// buffer, so reading the file overlaps with fingerprinting.
const (
	batchPackets = 256
	batchBytes   = 1 << 20
	batchesAhead = 4
)

// batch is a run of packets whose Data point into buf.
type batch struct {
	pkts []capture.Packet
	buf  []byte
	err  error // set on the last batch: io.EOF or the read error
}

// ReadFile runs one pcap or pcapng file through a new Sniffer, calling emit for
// each record in capture order (on the calling goroutine). Frame numbers start
// at 1 in each file. A file cut short inside a packet ends there without an
// error (Stats.Truncated), as with tshark; other read errors are returned
// after the records before them were emitted. A second goroutine reads the
// file ahead, in bounded batches.
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

	full := make(chan *batch, batchesAhead)
	free := make(chan *batch, batchesAhead+1)
	for range batchesAhead + 1 {
		free <- &batch{pkts: make([]capture.Packet, 0, batchPackets), buf: make([]byte, 0, batchBytes)}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		readAhead(src, free, full, stop)
	}()
	defer func() {
		close(stop)
		<-done
	}()

	for b := range full {
		for i := range b.pkts {
			s.HandlePacket(&b.pkts[i])
		}
		if b.err != nil {
			s.Close()
			st := s.Stats()
			switch {
			case errors.Is(b.err, io.EOF):
				return st, nil
			case errors.Is(b.err, io.ErrUnexpectedEOF):
				st.Truncated = true
				return st, nil
			}
			return st, fmt.Errorf("sniff: %w", b.err)
		}
		free <- b
	}
	return s.Stats(), nil // not reached: the last batch carries an error
}

// readAhead fills free batches from src and hands them on, until an error
// (io.EOF included), which goes with the last batch, or until stop closes.
func readAhead(src capture.Source, free <-chan *batch, full chan<- *batch, stop <-chan struct{}) {
	defer close(full)
	var p capture.Packet
	for {
		var b *batch
		select {
		case b = <-free:
		case <-stop:
			return
		}
		b.pkts, b.buf, b.err = b.pkts[:0], b.buf[:0], nil
		for len(b.pkts) < batchPackets && b.err == nil {
			if err := src.ReadPacket(&p); err != nil {
				b.err = err
				break
			}
			if len(b.buf)+len(p.Data) > cap(b.buf) && len(b.pkts) > 0 {
				// No room: hand this batch on, keep p for the next one.
				select {
				case full <- b:
				case <-stop:
					return
				}
				select {
				case b = <-free:
				case <-stop:
					return
				}
				b.pkts, b.buf, b.err = b.pkts[:0], b.buf[:0], nil
			}
			off := len(b.buf)
			b.buf = append(b.buf, p.Data...)
			q := p
			q.Data = b.buf[off:len(b.buf):len(b.buf)]
			b.pkts = append(b.pkts, q)
		}
		select {
		case full <- b:
		case <-stop:
			return
		}
		if b.err != nil {
			return
		}
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

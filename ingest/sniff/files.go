package sniff

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"unsafe"

	"github.com/guardd/guardd/characteristics/tlsfp"
	"github.com/guardd/guardd/ingest/capture"
)

// Read-ahead of ReadFile: batches of packets read straight into a batch's
// buffer (capture.FileSource.ReadBatch), so reading the file overlaps with
// decoding and nothing is copied.
const (
	batchPackets = 1024
	batchesAhead = 4
)

// batch is a run of packets read together.
type batch struct {
	*capture.Batch
	err error // set on the last batch: io.EOF or the read error
}

// ReadFile runs one pcap or pcapng file through a new Sniffer, calling emit for
// each record in capture order. Frame numbers start at 1 in each file. A file
// cut short inside a packet ends there without an error (Stats.Truncated), as
// with tshark; other read errors are returned after the records before them
// were emitted.
//
// The work is spread over goroutines: one reads the file ahead in bounded
// batches, the calling goroutine decodes packets and tracks flows, GOMAXPROCS
// workers compute the fingerprints of batches of hellos, and one goroutine
// calls emit. emit is called from that one goroutine only, never
// concurrently, and every call has returned when ReadFile returns.
func ReadFile(path string, cfg Config, emit func(*Record)) (Stats, error) {
	if emit == nil {
		return Stats{}, errors.New("sniff: nil emit func")
	}
	return readFile(path, cfg, &fingerprinter{emit: emit})
}

// FormatFile runs one capture file as ReadFile does, but renders each record
// with format and writes what it appends to w, in capture order, instead of
// emitting records: guardd fingerprint's output. format runs on the
// fingerprinting workers, so formatting is spread over the cores too: it is
// called concurrently and must be safe for that (AppendJSON is), and the
// Record it is given, strings included, is valid only during the call. One
// goroutine writes to w, a batch of records at a time; a write error stops
// the writing and is returned (wrapped) once the file has been read.
func FormatFile(path string, cfg Config, w io.Writer, format func(dst []byte, r *Record) []byte) (Stats, error) {
	if w == nil || format == nil {
		return Stats{}, errors.New("sniff: nil writer or format func")
	}
	f := &fingerprinter{w: w, format: format}
	st, err := readFile(path, cfg, f)
	if err == nil && f.werr != nil {
		err = fmt.Errorf("sniff: %s: write: %w", path, f.werr)
	}
	return st, err
}

// readFile runs path through a new Sniffer whose records go to f.
func readFile(path string, cfg Config, f *fingerprinter) (Stats, error) {
	s, err := New(cfg, func(*Record) {}) // its records go to f instead
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
		free <- &batch{Batch: capture.NewBatch(batchPackets)}
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

	f.start(s.opts)
	s.out = f.add
	for b := range full {
		for i := range b.Packets {
			s.HandlePacket(&b.Packets[i])
		}
		if b.err != nil {
			s.Close()
			f.close()
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
	f.close()
	return s.Stats(), nil // not reached: the last batch carries an error
}

// A hello's fingerprints (six hashes) cost more than decoding and tracking
// the packets that carry it, so ReadFile computes them on workers, a batch of
// records at a time, while the Sniffer goes on with the next packets.
const (
	fpBatchRecords    = 256
	fpBatchesInFlight = 4
)

// fingerprinter takes the records of a Sniffer in capture order, has workers
// compute the fingerprints of their hellos and emits them (or writes them,
// formatted), still in capture order, from one goroutine.
type fingerprinter struct {
	emit func(*Record) // ReadFile
	// FormatFile: workers render records into their batch's out, and the
	// emitting goroutine writes it to w; werr is the first write error.
	format func(dst []byte, r *Record) []byte
	w      io.Writer
	werr   error

	opts    tlsfp.Options
	cur     *fpBatch
	work    chan *fpBatch // to the workers, in any order
	order   chan *fpBatch // to the emitter, in capture order
	free    chan *fpBatch
	workers sync.WaitGroup
	emitted chan struct{}
}

type fpBatch struct {
	recs []pendingRecord // the first n are in use
	n    int
	out  []byte        // FormatFile: the records, formatted
	done chan struct{} // a token: a worker has fingerprinted the batch
}

type pendingRecord struct {
	rec       Record
	hello     bool // rec's Fingerprint is to be computed from ch
	transport byte
	ch        tlsfp.ClientHello // a copy: the Sniffer's is reused
}

// start makes the batches and starts the goroutines.
func (f *fingerprinter) start(opts tlsfp.Options) {
	f.opts = opts
	f.work = make(chan *fpBatch, fpBatchesInFlight)
	f.order = make(chan *fpBatch, fpBatchesInFlight)
	f.free = make(chan *fpBatch, fpBatchesInFlight)
	f.emitted = make(chan struct{})
	for range fpBatchesInFlight {
		f.free <- &fpBatch{recs: make([]pendingRecord, fpBatchRecords), done: make(chan struct{}, 1)}
	}
	f.cur = <-f.free
	for range max(1, runtime.GOMAXPROCS(0)) {
		f.workers.Add(1)
		go f.fingerprint()
	}
	go f.emitAll()
}

// add is the Sniffer's out: it queues a copy of r, and of ch for a hello.
func (f *fingerprinter) add(r *Record, ch *tlsfp.ClientHello, transport byte) {
	p := &f.cur.recs[f.cur.n]
	p.rec, p.hello, p.transport = *r, ch != nil, transport
	if ch != nil {
		ch.CopyTo(&p.ch)
	}
	f.cur.n++
	if f.cur.n == len(f.cur.recs) {
		f.send()
		f.cur = <-f.free
	}
}

// send hands the current batch on. Neither channel blocks: each holds as
// many batches as there are.
func (f *fingerprinter) send() {
	f.order <- f.cur
	f.work <- f.cur
	f.cur = nil
}

// close emits what is queued and stops the goroutines.
func (f *fingerprinter) close() {
	if f.cur.n > 0 {
		f.send()
	}
	close(f.work)
	close(f.order)
	f.workers.Wait()
	<-f.emitted
}

func (f *fingerprinter) fingerprint() {
	defer f.workers.Done()
	var text []byte // FormatFile: this worker's fingerprint text, reused
	for b := range f.work {
		b.out = b.out[:0]
		for i := range b.recs[:b.n] {
			p := &b.recs[i]
			if f.format == nil {
				if p.hello {
					p.rec.Fingerprint = tlsfp.Compute(&p.ch, p.transport, f.opts)
				}
				continue
			}
			if p.hello {
				var t tlsfp.Text
				text, t = tlsfp.AppendText(text[:0], &p.ch, p.transport, f.opts)
				// Strings over the reused buffer: valid during format only.
				str := unsafe.String(unsafe.SliceData(text), len(text))
				p.rec.Fingerprint = t.Fingerprint(str)
				start, end := t.Plain()
				p.rec.plain = str[start:end]
			}
			b.out = f.format(b.out, &p.rec)
			p.rec = Record{}
		}
		b.done <- struct{}{}
	}
}

func (f *fingerprinter) emitAll() {
	defer close(f.emitted)
	for b := range f.order {
		<-b.done
		if f.format != nil {
			if f.werr == nil {
				_, f.werr = f.w.Write(b.out)
			}
		} else {
			for i := range b.recs[:b.n] {
				f.emit(&b.recs[i].rec)
				b.recs[i].rec = Record{} // let the strings go
			}
		}
		b.n = 0
		f.free <- b
	}
}

// readAhead fills free batches from src and hands them on, until an error
// (io.EOF included), which goes with the last batch, or until stop closes.
func readAhead(src *capture.FileSource, free <-chan *batch, full chan<- *batch, stop <-chan struct{}) {
	defer close(full)
	for {
		var b *batch
		select {
		case b = <-free:
		case <-stop:
			return
		}
		b.err = src.ReadBatch(b.Batch)
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

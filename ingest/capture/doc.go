// Package capture reads packets from capture files and from live Linux
// interfaces, one record at a time into a Packet the caller owns.
//
// It promises:
//   - OpenFile detects pcap (µs or ns timestamps, either byte order, and the
//     Kuznetzov variant), pcapng (several sections, interfaces of different
//     link types, if_tsresol and if_tsoffset, EPB, SPB and the old PB) and
//     gzip or zstd compression of either from the magic bytes, never from the
//     file name.
//   - Packet.Frame counts every packet record from 1, as Wireshark's
//     frame.number does, so frame numbers match tshark's.
//   - Bad files give errors naming the file, the frame and the byte offset,
//     never a panic; buffers grow only as bytes actually arrive, and never
//     beyond MaxBlockSize, whatever a length field says. A file cut short inside a record ends with an
//     error wrapping io.ErrUnexpectedEOF after every whole record.
//   - OpenLive reads a Linux AF_PACKET TPACKET_V3 ring (gopacket/afpacket,
//     pure Go, no cgo), joins a PACKET_FANOUT_HASH group and attaches a
//     classic BPF filter; the default filter passes only what fingerprinting
//     needs.
//   - ReadPacket does not allocate: Packet.Data aliases a buffer (or the
//     kernel ring) that is valid until the next ReadPacket call.
//   - FileSource.ReadBatch reads many packets with large reads straight into
//     a Batch's buffer, which their Data alias until the Batch is reused, so
//     one goroutine can read ahead while another decodes, with no copy.
//
// It gives up:
//   - Compiling arbitrary tcpdump expressions in Go: a LiveConfig.BPF other
//     than the default is compiled by running `tcpdump -ddd`, or given as
//     that output directly.
//   - Writing captures, seeking, and concurrent use of one source: run one
//     LiveSource per goroutine in the same fanout group instead.
//   - Resynchronising after a corrupt pcap record header: reading stops there.
package capture

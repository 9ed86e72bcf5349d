// Package syslog receives the access log lines nginx sends to syslog
// (access_log syslog:server=...), so that a container, or a fleet of nginx
// hosts with one collector, needs no log file.
//
// It promises:
//   - Listeners on Unix datagram sockets (nginx's server=unix:PATH), UDP
//     (server=ADDRESS:PORT) and TCP with RFC 6587 framing, octet counting
//     or LF-terminated, told apart frame by frame (rsyslog, syslog-ng and
//     logger --tcp forward that way; nginx itself sends only datagrams).
//   - Headers of RFC 3164 exactly as nginx writes them ("<PRI>Mmm dd
//     hh:mm:ss HOST TAG: MSG", HOST absent with nohostname) and of RFC
//     5424. The message after the header is handed on as one line, for
//     the pipeline to parse with log.format like a line of a file, with the
//     header's HOSTNAME as syslog.host (the peer's address when a datagram
//     or stream over IP has none).
//   - Parse and the Framer never panic and do not allocate; a malformed
//     message is counted (guardd_syslog_malformed_total) and skipped.
//   - Datagrams lost to a full socket buffer are counted from the kernel's
//     own count (SO_RXQ_OVFL with each datagram, /proc/net/udp's drops
//     column while nothing is read): guardd_syslog_dropped_datagrams_total.
//     A Unix datagram socket does not drop: a sender whose datagram does not
//     fit blocks or, like nginx, gets EAGAIN and logs "send() failed".
//   - Messages are handed to one consumer in the order they were read,
//     batched while it is busy, so a slow consumer backs up into the
//     bounded queue and then into the kernel's buffer, never into memory.
//   - Run closes the sockets when its context ends (a Unix socket's path
//     is removed) and returns nil.
//
// It gives up:
//   - The header's timestamp: the access log line carries its own time.
//   - Authentication: a datagram's HOSTNAME is what the sender wrote. Keep
//     the listeners on loopback or a private network, and restrict who may
//     write to a Unix socket through its directory's permissions.
//   - TLS (RFC 5425).
package syslog

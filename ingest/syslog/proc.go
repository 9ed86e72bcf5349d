package syslog

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// procDrops returns the drops column of /proc/net/udp (or udp6) for the
// socket with inode ino: the kernel's count of datagrams it dropped because
// the socket's receive buffer was full. Unlike SO_RXQ_OVFL, which arrives
// with the next datagram read, it is current while nothing is read.
func procDrops(ino uint64) (int64, bool) {
	if ino == 0 {
		return 0, false
	}
	want := strconv.AppendUint(nil, ino, 10)
	for _, path := range []string{"/proc/self/net/udp", "/proc/self/net/udp6"} {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local rem st tx:rx tr:tm retrnsmt uid timeout inode ref pointer drops
			fs := bytes.Fields(sc.Bytes())
			if len(fs) < 13 || !bytes.Equal(fs[9], want) {
				continue
			}
			d, err := strconv.ParseInt(string(fs[12]), 10, 64)
			f.Close()
			return d, err == nil
		}
		f.Close()
	}
	return 0, false
}

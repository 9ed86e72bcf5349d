// Package tail follows log files the way logrotate and nginx treat them,
// without losing or repeating a line.
//
// A Tailer follows paths and globs (new files that match later are picked up),
// and both rotation styles:
//
//   - rename and create: the old file is renamed and a new one created at the
//     path. nginx keeps writing to the old file until it reopens its logs on
//     USR1, so the Tailer keeps reading the old file (by its open descriptor)
//     until it has been quiet for RotateGrace, while it reads the new one.
//   - copytruncate: the file is copied aside and truncated in place. The
//     Tailer notices the truncation (size below its offset, or a changed head),
//     finds the copy among the file's siblings by its head fingerprint, and
//     reads from the copy what it had not read yet, also when the copy was
//     made while guardd was stopped (the checkpoint's file is found
//     truncated at its path and its copy among its siblings, by head
//     fingerprint and length). Lines written between
//     logrotate's copy and its truncate are lost by logrotate itself; nothing
//     can recover them.
//
// Each batch of lines comes with the Position after it: per file its device,
// inode, offset and a fingerprint of its first bytes, so a position is never
// applied to a different file that happens to reuse a path or an inode. A
// consumer that stores the lines' effect and the Position together (one
// write) resumes exactly where it stopped, even after kill -9; see
// SaveCheckpoint for a consumer that only needs at-least-once.
//
// Why not github.com/nxadm/tail: measured, it lost the lines nginx wrote to
// the old file between rename and reopen (inotify mode) and thousands of lines
// on copytruncate (poll mode). See docs/tailing.md.
//
// Each line carries its 1-based number and byte offset in its file, so a
// consumer can name a bad line file:line; the number survives restarts (the
// Position records it) and starts again at 1 after a truncation.
//
// Only complete lines are delivered: a line still being written waits for
// its newline. Lines over MaxLineBytes are cut, flagged and counted.
package tail

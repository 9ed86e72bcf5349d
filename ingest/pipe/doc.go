// Package pipe reads access log lines from a stream that stays open until
// its writer closes it: standard input fed by `docker logs -f nginx` or
// `kubectl logs -f`, for `guardd run --stdin`.
//
// It promises:
//   - Lines are handed over as soon as a read returns them: what arrived
//     together is one batch (Writer.Mark after it), so a quiet pipe's lines
//     are counted at once and a busy one's in large batches.
//   - Lines are numbered from 1 and named by the stream's name in errors,
//     like a file's; a line over MaxLine is cut, handed over, and counted
//     (Stats.CutLines), its rest skipped.
//   - Read returns nil at the end of the stream and when ctx ends; a
//     stream with SetReadDeadline (an *os.File in non-blocking mode, such
//     as the one StdinFile returns) is interrupted, any other is abandoned
//     in its blocked read.
//
// It gives up: positions and checkpoints (a pipe cannot be re-read) and
// compression (pipe plain text; `guardd replay -` reads compressed input).
package pipe

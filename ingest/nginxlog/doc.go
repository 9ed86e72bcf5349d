// Package nginxlog turns nginx access-log lines into characteristics.Event
// values.
//
// Compile takes an nginx log_format — a bare format string, a whole pasted
// log_format directive (with escape= and several quoted strings), or the
// built-in name "combined" — and returns a Format whose Parse splits a line at
// the format's literal text and maps each nginx variable onto the Event:
// $remote_addr to IP, $time_local to Time, $request to Method, Path, Query and
// Protocol, $http_<name> to Headers, $cookie_<name> to Cookies, and anything it
// does not know to Vars by name. ParseJSON does the same for logs written as
// one JSON object per line. Reader reads a plain, gzip or zstd file line by line;
// ReadBatch hands lines to parallel workers without a per-line allocation, and
// ReadBlock reads whole lines straight into a worker's buffer, which SplitLine
// splits, so that the reading goroutine does no work per line.
// Format.Append does the reverse of Parse, writing an Event as nginx would.
// The combined format takes a fast path held by a fuzz test to the general
// one; ParseCache also remembers, per goroutine, the last $time_local parsed
// and the IPv6 addresses seen lately.
//
// Promises:
//   - Parse and ParseJSON never panic, and allocate nothing for a good line
//     once the Event's slices have grown; a Format is safe for concurrent use.
//   - Strings in the Event alias the line, which Parse may rewrite in place to
//     undo nginx's escaping: they are valid while the line is.
//   - A malformed line gives an error naming the variable, the byte offset and
//     what was expected (a *FieldError); the caller wraps it in a *LineError
//     with the Reader's file name and Line.
//   - Times are parsed by hand (no time.Parse) and returned in UTC.
//
// Gives up:
//   - A line is split at the first occurrence of the literal that follows each
//     variable. With escape=default or escape=json nginx escapes '"', so quoted
//     fields split exactly. With escape=none a value that contains the following
//     literal is recovered only when the split that follows fails on a field of
//     known shape (a number, a time, an address) or when it is the last field;
//     otherwise the line is split wrongly. At most 64 alternative splits are
//     tried per line. Two variables with no literal between them cannot be
//     split and are rejected by Compile.
//   - "-" and "" (what escape=json logs for an unset variable) mean absent,
//     so a header sent empty is not told apart from one not sent. $request is
//     the exception: its raw text, when it is not a request line, is kept in
//     Vars["request"].
//   - The zone offset of a logged time is applied and then dropped.
package nginxlog

// Package ingest is the folder of guardd's ingesters: each sub-package turns one
// source of requests into characteristics.Event values.
//
//   - ingest/nginxlog parses nginx access-log lines, in any log_format or as JSON
//     objects, from plain or gzip files.
//
// An ingester fills an Event the caller owns, and the Event's strings alias the
// ingester's buffer until its next call; nothing here enriches, counts or
// decides. This package itself holds no code.
package ingest

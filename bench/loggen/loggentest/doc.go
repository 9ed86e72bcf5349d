// Package loggentest hands tests and benchmarks the events of bench/loggen's
// labelled log as the pipeline hands them to the rules: every line parsed
// with the guardd log format and enriched against the log's own ASN and
// country database. Three test packages (rules, rules/engine, bench/loggen)
// read the log this way; they share this one reader.
//
// Only tests and benchmarks import it.
package loggentest

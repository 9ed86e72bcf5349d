# METADATA
# title: never
# description: >-
#   Counts nothing: replaying with this rule alone (--no-builtin --rules
#   pipeline/replay/testdata/norules) measures the replay path around rule
#   evaluation (reading, parsing, enrichment, sequencing), as
#   BenchmarkReplayNoRules does.
# custom:
#   characteristics: [ip.src]
#   requests_per_period: 1000
#   period: 1m
#   action: block
#   mitigation_timeout: 1m
package guardd.rules.never

count if input.http.status == 999

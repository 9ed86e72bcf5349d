# want: windows_empty.bad.rego:7: metadata windows: got []; want a non-empty list

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   windows: []
#   action: log
package guardd.rules.windows_empty

count if input.http.status == 404

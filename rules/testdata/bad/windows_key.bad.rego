# want: windows_key.bad.rego:7: metadata windows: element 1: unknown key "limit"

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   windows: [{period: 1h, limit: 5}]
#   action: log
package guardd.rules.windows_key

count if input.http.status == 404

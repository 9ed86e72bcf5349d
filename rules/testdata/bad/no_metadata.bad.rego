# want: no_metadata.bad.rego:3: rule no_metadata has no METADATA annotation

package guardd.rules.no_metadata

count if input.http.status == 404

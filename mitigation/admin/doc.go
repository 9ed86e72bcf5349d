// Package admin is the daemon's admin API, beside the mitigation store it
// exposes: list, add and delete mitigations (/v1/mitigations), the daemon's
// status (/v1/status), /metrics, /healthz and pprof.
//
// Everything but /metrics and /healthz needs the bearer token. The API is
// meant for loopback (config.Warnings names any other address); operators'
// requests are validated as strictly as rules' trips, and a scope the
// allowlist covers is refused with 409.
package admin

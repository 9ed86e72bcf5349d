// Package config is guardd's configuration file, decoded once into typed
// values: durations as time.Duration, networks as netip.Prefix, actions as
// mitigation.Action.
//
// Load starts from Default, decodes the YAML strictly (an unknown key is an
// error) and runs Validate. Every error names the file and the line of the
// offending key or value, and the field's dotted path where one is known.
// An empty section (`decision:` with nothing under it) keeps its defaults;
// `firewall.nftables:` and `blocklist.nginx_geo:` left empty turn the
// component on with its defaults.
//
// A reload is a list of Reloaders, one per component that holds
// configuration (Prometheus' reloaders are the model). Each is handed the old
// and the new Config and either applies the change or returns NeedsRestart
// naming what it could not apply; Reload reports both, so a changed listen
// address is reported as waiting for a restart, never as applied.
package config

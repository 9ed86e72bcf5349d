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
// configuration (Prometheus' reloaders are the model). Each declares the
// keys it applies live and those it reads only at start; Reload reports a
// changed start-only key as waiting for a restart without asking the
// component, keeps its running value in the configuration it hands on (so
// the parts waiting for a restart read what they run with), and hands the
// rest to each Apply. The reference's "reload" column (ReloadOf) is
// derived from the same declarations.
package config

// Package rules loads guardd's Rego rules and evaluates them per event.
//
// A rule is a Rego module (OPA v1 syntax) in package guardd.rules.<name> whose
// METADATA annotation carries its parameters under custom: (characteristics,
// period, requests_per_period, action, mitigation_timeout, algorithm, score).
// Its count rule is the counting expression and its mitigate rule the
// mitigation expression (mitigate defaults to count).
//
// What it promises:
//   - Load is all-or-nothing, and every error names file:line, the key or
//     token at fault and the accepted values. A rule that calls a built-in
//     reaching the network, the file system, the wall clock or randomness
//     (http.send, net.lookup_ip_addr, opa.runtime, time.now_ns, rand.intn,
//     uuid.rfc4122, io.jwt.encode_sign, ...) is rejected, and so is a count or
//     mitigate that is not boolean.
//   - Each rule is compiled, through partial evaluation with input unknown,
//     into native predicates over *characteristics.Event. Set.Eval then costs
//     tens of nanoseconds per rule and allocates nothing once a Matches has
//     grown. Each distinct condition of a Set is one bit, computed at most
//     once per event however many rules ask. The conditions that are pure
//     functions of one field (the path with its normalised forms, anomalies
//     and case folds; the query with its arguments; the user agent; the
//     referer; the method; the protocol) are also remembered across events
//     by that field's value, in a fixed-size table per Matches (values of
//     up to 16 bytes kept whole, longer ones by a keyed 64-bit hash, their
//     length and their ends; entries tagged with their Set, so a reload
//     never reads another's), and those of the status are tabulated when
//     the Set is built. A path whose digit runs no condition of the Set can tell apart
//     (proved per Set when it is built: see shape.go) is remembered by its
//     shape, so /product/123 and /product/456 share what they decide. An
//     event then costs a lookup per field and the few conditions its
//     values have not decided; a value never seen costs what it did
//     without the memo.
//   - Configuration rules read (Options.LoginPaths, from rules.login_paths)
//     is a module of constants, package guardd.config, compiled with the
//     rules: partial evaluation folds data.guardd.config.* into the native
//     predicates, and a changed value takes a new Load (a reload).
//   - What the native compiler does not understand is evaluated by OPA, visibly:
//     a log line at load naming the rule and the expression, Rule.Native false,
//     and guardd_rules_fallback_evaluations_total{rule}. A fallback evaluation
//     has a deadline; an error or a timeout counts as false, is counted in
//     guardd_rules_evaluation_errors_total{rule,reason} and logged (rate
//     limited). Evaluation never fails the caller.
//
// What it gives up: the native compiler handles comparisons of one input
// field with constants (==, !=, <, <=, >, >=, in, startswith, endswith,
// contains, strings.any_prefix_match, strings.any_suffix_match, regex.match,
// glob.match, net.cidr_contains, lower, upper, presence and not); joins of two
// input fields, comprehensions over input, and other built-ins fall back.
// Numbers are compared as float64, so integers beyond 2^53 may differ from
// OPA's exact arithmetic.
package rules

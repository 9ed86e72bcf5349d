// Package decision answers nginx at request time: is this request to be
// allowed, blocked, rate limited or shadow-banned?
//
// nginx asks through auth_request, which only tells 2xx (allow) from 401 and
// 403 (deny). So the protocol has two steps:
//
//  1. GET /v1/decide, nginx's auth subrequest. It carries the client's
//     address and port (X-Real-IP, X-Real-Port), the original method and URI
//     (X-Original-Method, X-Original-URI), and the client's own headers and
//     cookies, which auth_request passes along. guardd evaluates the rules'
//     mitigation expressions on the request and looks up active mitigations
//     for every scope shape the table holds (ip.src, ip.src.prefix, a cookie,
//     a JA4, ...), in O(1) each. Allow is 204. Anything else is 401 with
//     X-Guardd-Decision, a compact description of what to answer, which nginx
//     captures with auth_request_set.
//  2. nginx's error_page 401 sends the request to a named location that
//     proxies it to /v1/respond with that decision. guardd answers for real:
//     403 for block, 429 with Retry-After (delta seconds) and the IETF
//     RateLimit and RateLimit-Policy headers for rate_limit, a plausible 200
//     from the shadowban package for shadowban, 503 with Retry-After when
//     guardd sheds load. The upstream never sees a denied request.
//
// docs/nginx.md has the nginx configuration, including how to fail open or
// closed per location when guardd is unreachable.
//
// The Handler is served by package http1, an event-loop HTTP/1.1 server made
// for this one client: net/http's per-request work (a goroutine wake-up, a
// Request and its header map, a response writer) cost more than the
// decision itself, and under load its scheduler hand-offs pushed the tail
// latency past a millisecond on a machine shared with nginx. A decide
// request is read, decided and answered without allocating.
//
// Load shedding: a decide request that waited longer than Config.ShedAfter
// in guardd (behind slow decisions on its loop) is not evaluated; it is
// answered "shed", which /v1/respond renders as 503 with Retry-After. The
// shedder of package throttle does the same for the least important
// traffic classes while the upstream is overloaded.
//
// Request-time limits: the rules with action throttle (package throttle)
// are evaluated and counted on every request, and the most restrictive
// decides. A refused request is answered 401 with a "throttle" decision,
// which /v1/respond renders as 429 with Retry-After, RateLimit and
// RateLimit-Policy; an allowed request that a throttle rule counted gets
// RateLimit and RateLimit-Policy on its 204, for nginx to pass on with
// auth_request_set and add_header ... always. A mitigation outranks a
// throttle refusal.
//
// Counting: by default a decision does not count the request; counting
// happens once, from the access log line, which carries the response status
// most rules need. With a Config.Counter (guardd run's decision.count), the
// rules that read only what is known when a request arrives are counted at
// decision time instead, before the lookups, so the request that trips such
// a rule is already mitigated; the counter remembers the request's ID
// (nginx's $request_id, sent as X-Request-ID) and the request's log line,
// which carries the same ID, counts only the other rules. A request without
// an ID is left to its log line. Either way a request is counted once.
package decision

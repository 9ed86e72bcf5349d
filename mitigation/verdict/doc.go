// Package verdict holds the one per-request verdict of guardd: given a
// request and the tables in force (the allowlist, the request-time count,
// the throttle rules, the mitigations), what is done to it. The decision
// API (mitigation/decision) answers nginx with it; a replay
// (pipeline.Report) judges every logged request with it, so `guardd replay
// --clients` says what the decision API would have done.
//
// Decide is the order of the verdict, written once: an allowlisted request
// gets no action and is not counted; otherwise it is counted at request
// time, the throttle rules admit or refuse it, and every mitigation in force
// that covers it (a rule's mitigation only where the rule's mitigation
// expression matches the request) competes with the others: the strongest
// action wins, on a tie the earliest rule. A challenge does not apply to a
// request with a valid clearance (Clearances), and a request that is not a
// page view (PageView) gets the rule's challenge fallback instead of the
// challenge. A mitigation outranks a throttle
// refusal of equal or lower rank, and shedding answers only a request no
// mitigation answers.
//
// The two callers read the tables their own way (the decision API through
// the store's scope shapes and the rules' mitigation expressions, a replay
// through what its workers worked out and its report's records), each
// behind Request. Decide allocates nothing; what a Request allocates is
// its own.
package verdict

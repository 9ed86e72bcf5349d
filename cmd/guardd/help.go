package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
)

// helpTopic is one page of `guardd help TOPIC`. Its tables are built from
// the code (the characteristics package's list, the rule loader's metadata
// keys, the action and algorithm sets), so the help cannot name something
// guardd does not accept, nor miss something it does.
type helpTopic struct {
	summary string
	write   func(w io.Writer)
}

var helpTopics = map[string]helpTopic{
	"rules":           {"how a rule is written: its Rego, its metadata keys and their values", writeRulesHelp},
	"characteristics": {"what a rule can count on and read: every characteristic and its input path", writeCharacteristicsHelp},
	"actions":         {"what a tripped rule does to a client", writeActionsHelp},
}

// runHelp is `guardd help [TOPIC|COMMAND]`.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: guardd help [TOPIC|COMMAND]")
		return 2
	}
	switch name := args[0]; {
	case name == "-h" || name == "--help":
		fmt.Fprintln(stdout, "usage: guardd help [TOPIC|COMMAND]\n\nWith a topic, prints it; with a command, its usage and flags.")
		writeTopics(stdout)
		return 0
	case helpTopics[name].write != nil:
		helpTopics[name].write(stdout)
		return 0
	case commands[name].run != nil:
		return commands[name].run([]string{"-h"}, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "guardd help: no topic or command %q\n", name)
		writeTopics(stderr)
		return 2
	}
}

func writeTopics(w io.Writer) {
	fmt.Fprintln(w, "\nhelp topics ('guardd help TOPIC'):")
	names := make([]string, 0, len(helpTopics))
	for n := range helpTopics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %s\n", n, helpTopics[n].summary)
	}
}

// ruleKeyHelp is one line per metadata key; TestHelpTopics checks that it
// has exactly the keys the rule loader accepts.
var ruleKeyHelp = map[string]string{
	"characteristics":      "required: the counting key, a list such as [ip.src] or [ip.src.prefix, http.user_agent] ('guardd help characteristics')",
	"period":               "required: the counting window, a duration such as 30s, 1m, 1h30m",
	"requests_per_period":  "required: the limit; the rule trips when a key's count in period goes over it",
	"action":               "required: what a tripped key gets: %s ('guardd help actions')",
	"mitigation_timeout":   "how long the mitigation lasts (default 10m)",
	"algorithm":            "how counts are kept: %s (default sliding_window)",
	"anomaly_score":        "points a trip adds to the client's anomaly score instead of acting alone (up to 1000; keyed on ip.src); the scoring section sets where a score challenges and blocks",
	"score":                "a numeric characteristic added per matching request instead of 1 (http.request_time, http.bytes_sent ...)",
	"distinct":             "count the distinct values of this characteristic per key instead of requests",
	"regularity":           "{min_events: N, max_cv: X}: trip only when the key's events also come at machine-regular intervals",
	"windows":              "several limits: a list of {period, requests_per_period}, tripping on any",
	"burst":                "token_bucket and gcra: how many requests may arrive at once (default requests_per_period)",
	"shadow":               "action throttle: count and decide, never refuse (true or false)",
	"retry_jitter":         "action throttle: a random extra of up to this duration on Retry-After",
	"concurrency":          "action throttle: at most this many of the key's requests in flight (instead of period and requests_per_period)",
	"on_store_error":       "fleet mode: open, closed or local (default): what a request gets while Redis is unreachable",
	"challenge_fallback":   "action challenge: what a request that is not a page view gets: rate_limit (default), block or log",
	"challenge_tier":       "action challenge: pow (a JavaScript proof of work, default) or cookie",
	"challenge_difficulty": "action challenge: leading zero bits of the proof of work, 1 to 28",
}

func writeRulesHelp(w io.Writer) {
	fmt.Fprint(w, `RULES

A rule is a Rego module (OPA v1 syntax), one per file, in package
guardd.rules.<name>; <name> is the rule's name in metrics, logs and
mitigations. Its METADATA block carries the parameters; 'count' says which
events are counted, 'mitigate' (default: count) which requests a mitigation
covers. Files ending in _test.rego hold Rego unit tests ('guardd rules test').

  # METADATA
  # title: Login brute force
  # custom:
  #   characteristics: [ip.src]
  #   period: 1m
  #   requests_per_period: 10
  #   action: block
  #   mitigation_timeout: 10m
  package guardd.rules.login_bruteforce

  count if {
  	input.http.method == "POST"
  	input.http.path == "/login"
  	input.http.status == 401
  }

  mitigate if input.http.path == "/login"

Rules cannot reach the network or the file system. 'guardd rules check DIR'
validates them and says which compile to native predicates; errors name the
file, line and key.

METADATA KEYS (custom:)

`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range rules.MetadataKeys() {
		doc := ruleKeyHelp[k]
		switch k {
		case "action":
			doc = fmt.Sprintf(doc, strings.Join(mitigation.Names(), ", "))
		case "algorithm":
			doc = fmt.Sprintf(doc, strings.Join(rules.Algorithms, ", "))
		}
		fmt.Fprintf(tw, "  %s\t%s\n", k, doc)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nMore: docs/rules.md.")
}

func writeCharacteristicsHelp(w io.Writer) {
	fmt.Fprint(w, `CHARACTERISTICS

A characteristic is a value of an event (one request as seen at the edge) that
a rule counts on (characteristics:, distinct:, score:) and reads in Rego at its
input path. An absent value is left out of the input, so a rule body reading
it is undefined (false). ["name"] stands for any header, cookie, query
argument, log variable or anomaly name.

`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CHARACTERISTIC\tINPUT\tTYPE\tMEANING")
	for _, c := range characteristics.Describe() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, c.Input, c.Kind, c.Doc)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nMore: docs/rules.md, \"The input document\".")
}

// actionHelp is one line per action; TestHelpTopics checks it against
// mitigation.Names.
var actionHelp = map[string]string{
	"log":        "records the match and lets the request through",
	"block":      "403",
	"rate_limit": "429 with Retry-After and the RateLimit headers",
	"shadowban":  "a plausible 200 from a template; the application never sees the request",
	"firewall":   "pushed to the firewall's sets (nftables), and 403 at the decision API",
	"throttle":   "a request-time limit: each request admitted or refused (429) against its key's budget; no mitigation",
	"challenge":  "a page a person's browser passes (then carries a signed clearance) and a script does not; other requests get challenge_fallback",
}

func writeActionsHelp(w io.Writer) {
	fmt.Fprint(w, "ACTIONS\n\nWhat a tripped rule's mitigation does to a request it covers (metadata\naction:), strongest first when several cover one request:\n\n")
	names := mitigation.Names()
	slices.SortStableFunc(names, func(a, b string) int {
		x, _ := mitigation.ParseAction(a)
		y, _ := mitigation.ParseAction(b)
		switch {
		case x.Stronger(y):
			return -1
		case y.Stronger(x):
			return 1
		}
		return 0
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range names {
		fmt.Fprintf(tw, "  %s\t%s\n", n, actionHelp[n])
	}
	tw.Flush()
}

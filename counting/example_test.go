package counting_test

import (
	"fmt"
	"time"

	"github.com/guardd/guardd/counting"
)

func Example() {
	alg, err := counting.ParseAlgorithm("sliding_window")
	if err != nil {
		panic(err)
	}
	tab, err := counting.NewTable(counting.Config{
		Limit:   counting.Limit{Algorithm: alg, Period: time.Minute, Requests: 3},
		MaxKeys: 100_000,
	})
	if err != nil {
		panic(err)
	}
	// A rule keyed on ip.src hashes the characteristic values it counts on.
	key := counting.HashString("203.0.113.7")
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	for i := range 4 {
		r := tab.Add(key, 1, now+int64(i)*int64(time.Second))
		fmt.Printf("count %v exceeded %v remaining %v retry after %v\n", r.Count, r.Exceeded, r.Remaining, r.RetryAfter)
	}
	// Output:
	// count 1 exceeded false remaining 2 retry after 0s
	// count 2 exceeded false remaining 1 retry after 0s
	// count 3 exceeded false remaining 0 retry after 0s
	// count 4 exceeded true remaining 0 retry after 1m27s
}

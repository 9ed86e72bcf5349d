package engine

import (
	"cmp"
	"slices"
)

func sortMitigations(ms []Mitigation) {
	slices.SortFunc(ms, func(a, b Mitigation) int {
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Rule.Name, b.Rule.Name); c != 0 {
			return c
		}
		for i := range min(len(a.Scope), len(b.Scope)) {
			if c := cmp.Compare(a.Scope[i].Value, b.Scope[i].Value); c != 0 {
				return c
			}
		}
		return 0
	})
}

package counting

import "fmt"

// StoreErrorPolicy is what a counted request gets while a shared store
// (fleet mode's Redis) is unavailable or slower than its deadline: a rule's
// on_store_error, parsed once when the rule loads.
type StoreErrorPolicy uint8

// The policies (DESIGN.md, on_store_error). The zero value is Local.
const (
	// StoreErrorLocal judges the request against this node's own counts
	// with its share of the budget (the limit divided by the live nodes
	// last seen).
	StoreErrorLocal StoreErrorPolicy = iota
	// StoreErrorOpen allows it.
	StoreErrorOpen
	// StoreErrorClosed refuses it.
	StoreErrorClosed
	numStoreErrorPolicies
)

var storeErrorNames = [numStoreErrorPolicies]string{StoreErrorLocal: "local", StoreErrorOpen: "open", StoreErrorClosed: "closed"}

// StoreErrorPolicies are the configuration names, in the order of the
// constants.
func StoreErrorPolicies() []string { return storeErrorNames[:] }

// String returns the configuration name, or "other".
func (p StoreErrorPolicy) String() string {
	if p < numStoreErrorPolicies {
		return storeErrorNames[p]
	}
	return "other"
}

// Valid reports whether p is one of the policies.
func (p StoreErrorPolicy) Valid() bool { return p < numStoreErrorPolicies }

// ParseStoreErrorPolicy parses on_store_error; "" means StoreErrorLocal.
func ParseStoreErrorPolicy(s string) (StoreErrorPolicy, error) {
	if s == "" {
		return StoreErrorLocal, nil
	}
	for p, name := range storeErrorNames {
		if s == name {
			return StoreErrorPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("counting: unknown on_store_error %q; expect 'open', 'closed' or 'local'", s)
}

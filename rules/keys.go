package rules

import "slices"

// MetadataKeys lists the keys a rule's `custom:` metadata accepts, in the
// order load errors list them (for guardd help rules).
func MetadataKeys() []string { return slices.Clone(metadataKeys) }

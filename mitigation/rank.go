package mitigation

// Rank orders actions as Lookup does when several mitigations cover one
// scope: the higher wins (log < rate_limit < shadowban < block < firewall).
func (a Action) Rank() int {
	if !a.Valid() {
		return -1
	}
	return int(actionRank[a])
}

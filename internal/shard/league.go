package shard

import "strconv"

// DimCohort is the dimension type of a league's cohort boards.
const DimCohort = "cohort"

// CohortName is a cohort's name, "<tier>-<n>" (n from 1): the value of its
// board's cohort dimension.
func CohortName(tier string, n int64) string { return tier + "-" + strconv.FormatInt(n, 10) }

// PlacementKeys are the placement state of one tier of a league period, all
// under the tag "{family:period:cohort:tier}": placement of a member is one
// script in that slot.
type PlacementKeys struct {
	Placed  string // HASH member → cohort number n
	Cohorts string // HASH n → members placed; "open" → the open cohort's n
}

// Placement returns the placement keys of a tier of a league period.
func (l Layout) Placement(family, period, tier string) PlacementKeys {
	base := l.Prefix + ":{" + family + ":" + period + ":cohort:" + tier + "}:"
	return PlacementKeys{Placed: base + "placed", Cohorts: base + "cohorts"}
}

// LeagueMember returns the HASH of a member's league state in one family
// ("tier": the tier of their next placement; "p:<period>": their cohort
// of that period), under the member's own tag beside their profile: the
// tiers of millions of members spread over every slot.
func (l Layout) LeagueMember(member, family string) string {
	return l.Prefix + ":{p:" + member + "}:league:" + family
}

// MovesKeys are a league period's record of moves, under the period's tag.
type MovesKeys struct {
	Moves string // HASH member → the move (JSON)
	Done  string // STRING set once every move is recorded and every tier written
}

// Moves returns the keys of a league period's moves.
func (l Layout) Moves(family, period string) MovesKeys {
	base := l.Prefix + ":{" + family + ":" + period + "}:"
	return MovesKeys{Moves: base + "moves", Done: base + "moves:done"}
}

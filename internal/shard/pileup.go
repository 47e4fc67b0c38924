package shard

import (
	"maps"
	"slices"
)

// PileUp is the one pile-up rule (the layout's warning and the capacity
// planner's): a board of n shards piles up on a master that holds every one
// of them while other masters exist, or more than an even spread's
// ⌈n/masters⌉ + 1. onMaster counts the board's shards per master. Masters
// are checked in name order, so one layout always names the same master.
// ok is false when no master piles up (or n < 2, or masters < 2); fair is
// the even spread, ⌈n/masters⌉.
func PileUp(onMaster map[string]int, n, masters int) (master string, shards, fair int, ok bool) {
	if n < 2 || masters < 2 {
		return "", 0, 0, false
	}
	fair = (n + masters - 1) / masters
	for _, m := range slices.Sorted(maps.Keys(onMaster)) {
		if c := onMaster[m]; c == n || c > fair+1 {
			return m, c, fair, true
		}
	}
	return "", 0, fair, false
}

package gateway

import (
	"sync"

	"github.com/rankgate/rankgate/internal/merge"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

func shardOf(member string, n int) int { return shard.Of(member, n) }

// mergers recycles merge state so a fan-out allocates only its result.
var mergers = sync.Pool{New: func() any { return merge.NewMerger(rank.Before) }}

// mergeInto merges the first want items of lists into dst[:0].
func mergeInto(dst []rank.Item, lists [][]rank.Item, want int) []rank.Item {
	m := mergers.Get().(*merge.Merger[rank.Item])
	defer mergers.Put(m)
	return m.Merge(dst, lists, want)
}

func mergeItems(lists [][]rank.Item, want int) []rank.Item {
	return mergeInto(make([]rank.Item, 0, want), lists, want)
}

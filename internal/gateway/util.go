package gateway

import (
	"time"

	"strconv"

	"github.com/rankgate/rankgate/internal/merge"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

func itoa(v int) string     { return strconv.Itoa(v) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

func shardOf(member string, n int) int { return shard.Of(member, n) }

type timeT = time.Time

func mergeItems(lists [][]rank.Item, want int) []rank.Item {
	return merge.Merge(make([]rank.Item, 0, want), lists, want, rank.Before)
}

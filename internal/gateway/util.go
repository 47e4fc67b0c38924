package gateway

import (
	"github.com/rankgate/rankgate/internal/shard"
)

func shardOf(member string, n int) int { return shard.Of(member, n) }

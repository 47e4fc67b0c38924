package store

import (
	"context"
	"fmt"
	"time"
)

// CountEvent counts eventID in the sliding window key (shard.Layout
// MemberRate: one member's events under a player token in one family) with
// rate.lua, in the member's slot: it is counted unless limit events were
// counted within window before it; an id already in the window is not
// counted again. retry is 0 when counted, else the time until the oldest
// counted event leaves the window. The window runs on the node's clock, so
// every gateway shares it.
func (s *Store) CountEvent(ctx context.Context, key, eventID string, limit int, window time.Duration) (time.Duration, error) {
	if limit < 1 || window < time.Millisecond {
		return 0, fmt.Errorf("store: rate limit %d per %s", limit, window)
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	ms, err := rateScript.Run(ctx, s.rw, []string{key}, limit, window.Milliseconds(), eventID).Int64()
	if err != nil {
		return 0, s.fail("rate", fmt.Errorf("counting an event of %s: %w", key, err))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

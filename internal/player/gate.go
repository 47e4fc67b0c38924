package player

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// ClientWrites is a family's client_writes: what a write:self token may do.
type ClientWrites struct {
	// MaxDelta bounds |delta| (or |value| in a max/min family) of one event.
	MaxDelta int64
	// MaxEventsPerMinute bounds the events of one member in any 60 s.
	MaxEventsPerMinute int
}

// RateWindow is the window of MaxEventsPerMinute.
const RateWindow = time.Minute

// RateCounter counts a member's events in Redis (*store.Store): the event
// is counted unless limit events were counted within window before it (an
// event id already counted is not counted again); retry is 0 when counted,
// else how long until the oldest leaves the window.
type RateCounter interface {
	CountEvent(ctx context.Context, key, eventID string, limit int, window time.Duration) (retry time.Duration, err error)
}

// Write is what the gate needs of an event.
type Write struct {
	Family   string
	User     string
	EventID  string
	Delta    *int64
	Value    *int64
	Reverses string
}

// RateLimitedError is a write past its member's rate: 429 rate_limited with
// Retry-After.
type RateLimitedError struct {
	RetryAfter time.Duration
	Limit      int
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("this member is over %d events per minute; retry after %ds", e.Limit, RetryAfterSeconds(e.RetryAfter))
}

// RetryAfterSeconds rounds d up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// Gate applies the rules of self-only writes.
type Gate struct {
	families func(family string) (ClientWrites, bool)
	rate     RateCounter
	layout   shard.Layout
}

// NewGate builds the gate. families answers a family's client_writes (false:
// the family takes no player writes); rate counts in Redis; layout builds
// the counters' keys.
func NewGate(families func(string) (ClientWrites, bool), rate RateCounter, layout shard.Layout) (*Gate, error) {
	if families == nil || rate == nil {
		return nil, errors.New("player: NewGate needs the families' client_writes and a rate counter")
	}
	return &Gate{families: families, rate: rate, layout: layout}, nil
}

// CheckEvent decides whether the player member may write w, and counts it
// against the member's rate when it may: 403 forbidden for another member,
// a reversal, or a family without client_writes; 422 out_of_range past
// max_delta; *RateLimitedError past max_events_per_minute. Checks that need
// no Redis come first, so a refused event costs no count.
func (g *Gate) CheckEvent(ctx context.Context, member string, w Write) error {
	if w.User != member {
		return &rank.Error{Code: rank.CodeForbidden, Field: "user", Message: "a player token writes events only for its own member"}
	}
	if w.Reverses != "" {
		return &rank.Error{Code: rank.CodeForbidden, Field: "reverses", Message: "a player token cannot reverse events"}
	}
	cw, ok := g.families(w.Family)
	if !ok {
		return &rank.Error{Code: rank.CodeForbidden, Field: "family", Message: "family " + w.Family + " takes no events from player tokens"}
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"delta", w.Delta}, {"value", w.Value}} {
		if f.v != nil && (*f.v > cw.MaxDelta || *f.v < -cw.MaxDelta) {
			return &rank.Error{Code: rank.CodeOutOfRange, Field: f.name,
				Message: fmt.Sprintf("a player token's %s must lie within ±%d in family %s", f.name, cw.MaxDelta, w.Family)}
		}
	}
	retry, err := g.rate.CountEvent(ctx, g.layout.MemberRate(member, w.Family), w.EventID, cw.MaxEventsPerMinute, RateWindow)
	if err != nil {
		return err
	}
	if retry > 0 {
		return &RateLimitedError{RetryAfter: retry, Limit: cw.MaxEventsPerMinute}
	}
	return nil
}

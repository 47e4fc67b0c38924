package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// PeriodState is what the period meta hash records.
type PeriodState struct {
	Exists bool
	State  string         // open | frozen | … ("" when absent)
	Shards map[string]int // dimension type → shard count, fixed at first write
	Rules  string
}

// EnsurePeriod records the shard counts of a family period the first time it
// is written (HSETNX: a config change only affects new periods) and returns
// what is recorded.
func (s *Store) EnsurePeriod(ctx context.Context, pk shard.PeriodKeys, shards map[string]int, rules string, nowMs int64) (PeriodState, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	for t, n := range shards {
		pipe.HSetNX(ctx, pk.Meta, "shards:"+t, n)
	}
	pipe.HSetNX(ctx, pk.Meta, "state", "open")
	pipe.HSetNX(ctx, pk.Meta, "rules", rules)
	pipe.HSetNX(ctx, pk.Meta, "created", nowMs)
	all := pipe.HGetAll(ctx, pk.Meta)
	if _, err := pipe.Exec(ctx); err != nil {
		return PeriodState{}, s.fail("period", fmt.Errorf("ensure period %s: %w", pk.Meta, err))
	}
	return parsePeriod(all.Val())
}

// Period reads the period meta hash.
func (s *Store) Period(ctx context.Context, pk shard.PeriodKeys) (PeriodState, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	v, err := s.rw.HGetAll(ctx, pk.Meta).Result()
	if err != nil {
		return PeriodState{}, s.fail("period", fmt.Errorf("read period %s: %w", pk.Meta, err))
	}
	return parsePeriod(v)
}

func parsePeriod(h map[string]string) (PeriodState, error) {
	p := PeriodState{Exists: len(h) > 0, State: h["state"], Rules: h["rules"], Shards: map[string]int{}}
	for k, v := range h {
		if t, ok := strings.CutPrefix(k, "shards:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return PeriodState{}, fmt.Errorf("period meta: bad shard count %s=%q", k, v)
			}
			p.Shards[t] = n
		}
	}
	return p, nil
}

// RegisterBoards adds dimension names to the period's set of boards.
func (s *Store) RegisterBoards(ctx context.Context, pk shard.PeriodKeys, dims []string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	members := make([]any, len(dims))
	for i, d := range dims {
		members[i] = d
	}
	return s.fail("sadd", s.rw.SAdd(ctx, pk.Boards, members...).Err())
}

// Boards lists the dimension names that exist in a period.
func (s *Store) Boards(ctx context.Context, pk shard.PeriodKeys) ([]string, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	v, err := s.rw.SMembers(ctx, pk.Boards).Result()
	return v, s.fail("smembers", err)
}

// TakeSeq reserves n achievement numbers of a period and returns the first.
// Numbers start at 1 and only grow; a retried event simply takes new ones.
func (s *Store) TakeSeq(ctx context.Context, pk shard.PeriodKeys, n int64) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	last, err := s.rw.IncrBy(ctx, pk.Seq, n).Result()
	if err != nil {
		return 0, s.fail("incrby", fmt.Errorf("take seq %s: %w", pk.Seq, err))
	}
	return last - n + 1, nil
}

// LateEvent is an event refused because its period was closed, kept for
// review in the period's review stream.
type LateEvent struct {
	ID         string          // the stream entry's id; set by LateEvents
	Reason     string          // why it was refused ("frozen", "after_grace", …)
	Event      json.RawMessage // the event as the client sent it (JSON)
	ReceivedAt time.Time       // when the gateway refused it (millisecond precision)
}

// lateStreamMax bounds the review stream (approximate trimming).
const lateStreamMax = 100000

// RecordLate appends a refused event to the period's review stream and
// answers the entry's id.
func (s *Store) RecordLate(ctx context.Context, pk shard.PeriodKeys, e LateEvent) (string, error) {
	if !json.Valid(e.Event) {
		return "", fmt.Errorf("record late event: the event is not valid JSON")
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	id, err := s.rw.XAdd(ctx, &redis.XAddArgs{
		Stream: pk.Late, MaxLen: lateStreamMax, Approx: true,
		Values: []any{"reason", e.Reason, "event", string(e.Event), "received_ms", e.ReceivedAt.UnixMilli()},
	}).Result()
	return id, s.fail("xadd", err)
}

// LateEvents reads up to count entries of a period's review stream, oldest
// first. An entry whose fields are damaged is an error naming its id.
func (s *Store) LateEvents(ctx context.Context, pk shard.PeriodKeys, count int64) ([]LateEvent, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	msgs, err := s.rw.XRangeN(ctx, pk.Late, "-", "+", count).Result()
	if err != nil {
		return nil, s.fail("xrange", err)
	}
	out := make([]LateEvent, len(msgs))
	for i, m := range msgs {
		reason, _ := m.Values["reason"].(string)
		ev, _ := m.Values["event"].(string)
		ms, _ := m.Values["received_ms"].(string)
		at, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || !json.Valid([]byte(ev)) {
			return nil, fmt.Errorf("review stream %s: entry %s is damaged", pk.Late, m.ID)
		}
		out[i] = LateEvent{ID: m.ID, Reason: reason, Event: json.RawMessage(ev), ReceivedAt: time.UnixMilli(at).UTC()}
	}
	return out, nil
}

// PutProfile stores a member's display profile.
func (s *Store) PutProfile(ctx context.Context, key string, fields map[string]string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.TxPipeline()
	pipe.Del(ctx, key)
	if len(fields) > 0 {
		vals := make([]any, 0, 2*len(fields))
		for k, v := range fields {
			vals = append(vals, k, v)
		}
		pipe.HSet(ctx, key, vals...)
	}
	_, err := pipe.Exec(ctx)
	return s.fail("profile", err)
}

// Profiles reads many profiles in one pipelined round trip (split per node).
// A missing profile is a nil map.
func (s *Store) Profiles(ctx context.Context, keys []string, replica bool) ([]map[string]string, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	c, _ := s.reader(replica)
	pipe := c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HGetAll(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.fail("profiles", err)
	}
	out := make([]map[string]string, len(keys))
	for i, c := range cmds {
		if v := c.Val(); len(v) > 0 {
			out[i] = v
		}
	}
	return out, nil
}

package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
)

// The change feeds (docs/architecture.md, "The read index"): the write scripts of a family with a read
// index append every change of a board shard's sorted set to the shard's
// stream (shard.Keys.Feed) — fields m (the stored member) and s (its new
// score, "" when it left), or r (a reset: the sorted set was replaced whole,
// by a rebuild swap or a derive). A gateway's index loads a shard by noting
// its feed's last id (FeedTail), scanning the sorted set (FeedScan) and then
// reading the feed from the noted id on (FeedRead); every read of the feed
// starts at the last id it applied, inclusive, so a feed that lost that id
// (trimmed, flushed, a failover that lost writes) shows as a gap.

// FeedOpKind selects what one FeedOp asks.
type FeedOpKind uint8

// Feed operations.
const (
	// FeedTail: the feed's last entry (XREVRANGE Key + - COUNT 1); no entry
	// when the feed is empty or absent.
	FeedTail FeedOpKind = iota + 1
	// FeedRead: entries from From (inclusive; "" the start) on, at most
	// Count (XRANGE Key From + COUNT Count).
	FeedRead
	// FeedScan: one step of a ZSCAN of the sorted set Key from Cursor,
	// about Count members.
	FeedScan
	// FeedCard: the sorted set's cardinality (ZCARD Key).
	FeedCard
)

// FeedOp is one operation of a Feed batch.
type FeedOp struct {
	Kind   FeedOpKind
	Key    string // the feed (Tail, Read) or the sorted set (Scan, Card)
	From   string // Read
	Cursor uint64 // Scan
	Count  int64  // Read, Scan
}

// FeedEntry is one entry of a change feed.
type FeedEntry struct {
	ID string
	// Ms is the id's time part: when Redis appended the entry (its clock).
	Ms     int64
	Member string // the stored member (sort-column prefix included)
	Score  int64
	// Removed: the member left the sorted set.
	Removed bool
	// Reset, when not empty, says why the sorted set was replaced whole
	// (swap, derive): the shard must be read again.
	Reset string
}

// FeedReply is the answer to one FeedOp; Err is its own error.
type FeedReply struct {
	Entries []FeedEntry // Tail (0 or 1 entry), Read
	Items   []rank.Item // Scan
	Cursor  uint64      // Scan: the next cursor, 0 at the end
	N       int64       // Card
	Err     error
}

// Feed runs ops in one pipeline on the masters (go-redis splits it per node
// and runs the nodes in parallel: one round trip per node) and writes each
// answer into out[i] (len(out) ≥ len(ops)).
func (s *Store) Feed(ctx context.Context, ops []FeedOp, out []FeedReply) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	cmds := make([]redis.Cmder, len(ops))
	pipe := s.rw.Pipeline()
	for i, op := range ops {
		switch op.Kind {
		case FeedTail:
			cmds[i] = pipe.XRevRangeN(ctx, op.Key, "+", "-", 1)
		case FeedRead:
			from := op.From
			if from == "" {
				from = "-"
			}
			cmds[i] = pipe.XRangeN(ctx, op.Key, from, "+", op.Count)
		case FeedScan:
			cmds[i] = pipe.ZScan(ctx, op.Key, op.Cursor, "", op.Count)
		case FeedCard:
			cmds[i] = pipe.ZCard(ctx, op.Key)
		default:
			c := redis.NewCmd(ctx)
			c.SetErr(fmt.Errorf("store: unknown feed op %d", op.Kind))
			cmds[i] = c
		}
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read below
	for i, op := range ops {
		out[i] = s.parseFeed(op, cmds[i])
	}
}

func (s *Store) parseFeed(op FeedOp, cmd redis.Cmder) FeedReply {
	var r FeedReply
	if err := cmd.Err(); err != nil {
		op := "feed"
		if _, scan := cmd.(*redis.ScanCmd); scan {
			op = "zscan"
		}
		r.Err = s.fail(op, err)
		return r
	}
	switch c := cmd.(type) {
	case *redis.XMessageSliceCmd:
		msgs := c.Val()
		r.Entries = make([]FeedEntry, len(msgs))
		for j, m := range msgs {
			e, err := feedEntry(m)
			if err != nil {
				r.Err = fmt.Errorf("feed %s: %w", op.Key, err)
				return r
			}
			r.Entries[j] = e
		}
	case *redis.ScanCmd:
		kv, cursor := c.Val()
		if len(kv)%2 != 0 {
			r.Err = fmt.Errorf("zscan %s: odd reply of %d elements", op.Key, len(kv))
			return r
		}
		r.Items = make([]rank.Item, len(kv)/2)
		for j := 0; j < len(kv); j += 2 {
			sc, err := ParseScore(kv[j+1])
			if err != nil {
				r.Err = fmt.Errorf("zscan %s: %w", op.Key, err)
				return r
			}
			r.Items[j/2] = rank.Item{Score: sc, Member: kv[j]}
		}
		r.Cursor = cursor
	case *redis.IntCmd:
		r.N = c.Val()
	default:
		r.Err = fmt.Errorf("store: unexpected feed reply %T", cmd)
	}
	return r
}

// feedEntry parses one stream entry written by common.lua's feed or
// feed_reset.
func feedEntry(m redis.XMessage) (FeedEntry, error) {
	e := FeedEntry{ID: m.ID}
	ms, _, ok := strings.Cut(m.ID, "-")
	if !ok {
		return e, fmt.Errorf("bad entry id %q", m.ID)
	}
	var err error
	if e.Ms, err = strconv.ParseInt(ms, 10, 64); err != nil {
		return e, fmt.Errorf("bad entry id %q", m.ID)
	}
	if r, ok := m.Values["r"].(string); ok {
		e.Reset = r
		if e.Reset == "" {
			e.Reset = "reset"
		}
		return e, nil
	}
	member, ok1 := m.Values["m"].(string)
	score, ok2 := m.Values["s"].(string)
	if !ok1 || !ok2 || member == "" {
		return e, fmt.Errorf("entry %s: want fields m and s, got %v", m.ID, m.Values)
	}
	e.Member = member
	if score == "" {
		e.Removed = true
		return e, nil
	}
	if e.Score, err = ParseScore(score); err != nil {
		return e, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	return e, nil
}

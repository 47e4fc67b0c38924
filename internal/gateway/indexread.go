package gateway

import (
	"context"
	"sort"
	"time"

	"github.com/rankgate/rankgate/internal/indexfeed"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/rankindex"
	"github.com/rankgate/rankgate/internal/shard"
)

// The read index (docs/architecture.md, "The read index"): a family with index.enabled has its boards
// in each gateway's memory (internal/indexfeed keeps them current from the
// change feeds). Reads that ask for consistency=index, and reads that name
// no consistency while the board's lag is within the family's max_lag,
// answer from it; everything else — and every read while the board loads —
// takes today's path, and the answer's source says which served it.

// indexRead computes one answer from a board's index. It reads the index
// inside bd.View and does its Redis work (profiles, metadata) outside.
type indexRead[V metaOf] func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (V, error)

// indexSpec names a board's shard keys for the index.
func (s *Service) indexSpec(rc *readCtx) indexfeed.Spec {
	pb := rc.plan(s)
	feeds := make([]string, len(pb.Keys))
	for i, z := range pb.Keys {
		feeds[i] = shard.FeedKey(z)
	}
	sp := indexfeed.Spec{Name: rc.b.name(), Family: rc.b.fam.cfg.Name, Z: pb.Keys, Feed: feeds}
	if c := rc.b.fam.enc.Cols; c != nil {
		sp.PrefixLen = c.PrefixLen()
	}
	return sp
}

// tryIndex answers from the read index when the request and the board
// allow it (served true); otherwise the caller takes today's path.
func tryIndex[V metaOf](ctx context.Context, s *Service, rc *readCtx, op string, fromIndex indexRead[V]) (v V, served bool, err error) {
	level := rc.o.Consistency
	f := rc.b.fam
	if s.index == nil || f.feedLen == 0 || fromIndex == nil || (level != ConsistencyIndex && level != ConsistencyDefault) {
		return v, false, nil
	}
	bd, st := s.index.Get(rc.b.name(), func() indexfeed.Spec { return s.indexSpec(rc) })
	switch st {
	case indexfeed.Loading:
		s.index.Fallback(f.cfg.Name, indexfeed.ReasonLoading)
		return v, false, nil
	case indexfeed.TooBig:
		s.index.Fallback(f.cfg.Name, indexfeed.ReasonTooBig)
		return v, false, nil
	}
	asOf := bd.AsOf()
	lag := max(time.Since(asOf), 0) // the index's own clock (RunIndex)
	if lag > f.cfg.Index.MaxLag/2 {
		bd.Nudge()
		s.index.Poke()
	}
	if level == ConsistencyDefault && lag > f.cfg.Index.MaxLag {
		s.index.Fallback(f.cfg.Name, indexfeed.ReasonLag)
		return v, false, nil
	}
	ms := lag.Milliseconds()
	rc.meta.Source, rc.meta.AsOf, rc.meta.LagMs = SourceIndex, asOf.UTC(), &ms
	v, err = fromIndex(ctx, rc, bd)
	s.countRead(op, SourceIndex, err)
	return v, true, err
}

// betterIn counts the entries strictly better than it: more points, or on a
// family with sort columns better on (points, columns) — what a competition
// rank starts from.
func betterIn(ix *rankindex.Index, enc rank.Encoding, it rank.Item) int64 {
	if enc.Cols != nil {
		return int64(ix.Ahead(rank.Item{Score: it.Score, Member: rank.BetterKey(enc.Cols.Key(it.Member))}))
	}
	return int64(ix.AtLeast(enc.MinScoreAbove(enc.PointsOf(it.Score))))
}

// atLeastIn counts the entries at least as good as it (points, and columns).
func atLeastIn(ix *rankindex.Index, enc rank.Encoding, it rank.Item) int64 {
	if enc.Cols != nil {
		return int64(ix.Ahead(rank.Item{Score: it.Score, Member: enc.Cols.Key(it.Member)}))
	}
	return int64(ix.AtLeast(enc.MinScoreOf(enc.PointsOf(it.Score))))
}

// idOf is a stored member's user id: the stored member less its sort-column
// prefix (rankindex's id rule).
func idOf(enc rank.Encoding, stored string) string {
	if enc.Cols != nil {
		if p := enc.Cols.PrefixLen(); len(stored) > p {
			return stored[p:]
		}
	}
	return stored
}

// atOrBefore counts the entries at or before c in board order: the position
// the page after cursor c starts at.
func atOrBefore(ix *rankindex.Index, enc rank.Encoding, c rank.Item) int {
	p := ix.Ahead(c)
	if it, ok := ix.Get(idOf(enc, c.Member)); ok && it == c {
		p++
	}
	return p
}

// topIndex: the first limit entries.
func (s *Service) topIndex(limit int) indexRead[Page] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (Page, error) {
		var items []rank.Item
		bd.View(func(ix *rankindex.Index) { items = ix.AppendFrom(make([]rank.Item, 0, limit), 0, limit) })
		entries := rc.toEntries(items)
		rank.FillRanks(entries, 0, 0, rc.b.fam.mode)
		return s.finishPage(ctx, rc, "top", entries, "")
	}
}

// offsetIndex: limit entries from position offset.
func (s *Service) offsetIndex(offset, limit int) indexRead[Page] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (Page, error) {
		var items []rank.Item
		var more int64
		enc := rc.b.fam.enc
		bd.View(func(ix *rankindex.Index) {
			items = ix.AppendFrom(make([]rank.Item, 0, limit), offset, limit)
			if len(items) > 0 {
				more = betterIn(ix, enc, items[0])
			}
		})
		entries := rc.toEntries(items)
		rank.FillRanks(entries, int64(offset), more, rc.b.fam.mode)
		return s.finishPage(ctx, rc, "entries_offset", entries, "")
	}
}

// keysetIndex: the limit entries after cursor cur (from the start without
// one, or from the top of the points band [lo, hi] of a range), stopping
// at the band's bottom; the next cursor when more follow.
func (s *Service) keysetIndex(op, scope string, cur *cursor, band *[2]int64, limit int) indexRead[Page] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (Page, error) {
		var items []rank.Item
		var first, more int64
		enc := rc.b.fam.enc
		bd.View(func(ix *rankindex.Index) {
			p := 0
			switch {
			case cur != nil:
				p = atOrBefore(ix, enc, rank.Item{Score: cur.Score, Member: cur.Member})
			case band != nil:
				p = ix.AtLeast(band[1] + 1)
			}
			items = ix.AppendFrom(make([]rank.Item, 0, limit+1), p, limit+1)
			if band != nil {
				k := sort.Search(len(items), func(i int) bool { return items[i].Score < band[0] })
				items = items[:k]
			}
			if len(items) > 0 {
				more = betterIn(ix, enc, items[0])
			}
			first = int64(p)
		})
		items, next := pageOf(scope, items, limit)
		entries := rc.toEntries(items)
		rank.FillRanks(entries, first, more, rc.b.fam.mode)
		return s.finishPage(ctx, rc, op, entries, next)
	}
}

// countIndex: members whose stored score lies in [lo, hi] (ok false: none
// can).
func (s *Service) countIndex(lo, hi int64, ok bool) indexRead[Count] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (Count, error) {
		var n int
		if ok {
			bd.View(func(ix *rankindex.Index) { n = ix.Count(lo, hi) })
		}
		return Count{ReadMeta: rc.meta, Count: int64(n)}, nil
	}
}

// memberIndex: a member's standing.
func (s *Service) memberIndex(user string) indexRead[MemberStanding] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (MemberStanding, error) {
		if !rank.ValidMember(user) {
			return MemberStanding{}, rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}")
		}
		enc := rc.b.fam.enc
		var it rank.Item
		var found bool
		var pos, card, more, least int64
		bd.View(func(ix *rankindex.Index) {
			if it, found = ix.Get(user); found {
				pos, card = int64(ix.Ahead(it)), int64(ix.Len())
				more, least = betterIn(ix, enc, it), atLeastIn(ix, enc, it)
			}
		})
		if !found {
			return MemberStanding{}, rank.Errorf(rank.CodeNotRanked, "%s is not on board %s", user, rc.b.name())
		}
		return s.standing(ctx, rc, user, it, pos, card, more, least)
	}
}

// aroundIndex: the entries within radius of a member's position.
func (s *Service) aroundIndex(user string, radius int) indexRead[Page] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (Page, error) {
		if !rank.ValidMember(user) {
			return Page{}, rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}")
		}
		enc := rc.b.fam.enc
		var items []rank.Item
		var found bool
		var first, more int64
		bd.View(func(ix *rankindex.Index) {
			var it rank.Item
			if it, found = ix.Get(user); !found {
				return
			}
			p := ix.Ahead(it)
			start := max(0, p-radius)
			items = ix.AppendFrom(make([]rank.Item, 0, p+radius+1-start), start, p+radius+1-start)
			first = int64(start)
			more = betterIn(ix, enc, items[0])
		})
		if !found {
			return Page{}, rank.Errorf(rank.CodeNotRanked, "%s is not on board %s", user, rc.b.name())
		}
		entries := rc.toEntries(items)
		rank.FillRanks(entries, first, more, rc.b.fam.mode)
		return s.finishPage(ctx, rc, "around", entries, "")
	}
}

// lookupIndex: the listed members on the board, in board order.
func (s *Service) lookupIndex(users []string) indexRead[Page] {
	return func(ctx context.Context, rc *readCtx, bd *indexfeed.Board) (Page, error) {
		enc := rc.b.fam.enc
		items := make([]rank.Item, 0, len(users))
		var pos, more []int64
		bd.View(func(ix *rankindex.Index) {
			for _, u := range users {
				if it, ok := ix.Get(u); ok {
					items = append(items, it)
				}
			}
			sort.Slice(items, func(a, b int) bool { return rank.Before(items[a], items[b]) })
			pos, more = make([]int64, len(items)), make([]int64, len(items))
			for j, it := range items {
				pos[j], more[j] = int64(ix.Ahead(it)), betterIn(ix, enc, it)
			}
		})
		entries := rc.toEntries(items)
		for j := range entries {
			entries[j].Position = pos[j]
			entries[j].Rank = pos[j] + 1
			if rc.b.fam.mode == rank.Competition {
				entries[j].Rank = more[j] + 1
			}
		}
		return s.finishPage(ctx, rc, "lookup", entries, "")
	}
}

// RunIndex runs the read index's follower until ctx ends (a no-op when no
// family keeps an index), keeping the national board of each indexed
// family's current period loaded (checked every few seconds, so a period
// roll-over brings the new board in).
func (s *Service) RunIndex(ctx context.Context) {
	if s.index == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.index.Run(ctx)
	}()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		s.preloadIndex(ctx)
		select {
		case <-ctx.Done():
			<-done
			return
		case <-t.C:
		}
	}
}

// preloadIndex asks for the current period's national board of every
// indexed family.
func (s *Service) preloadIndex(ctx context.Context) {
	for _, name := range s.cfg.FamilyNames {
		f := s.families[name]
		if f.feedLen == 0 {
			continue
		}
		rc, err := s.startRead(ctx, BoardRef{Family: name, Period: "current", Dimension: shard.National}, ReadOptions{})
		if err != nil {
			s.log.Debug("index: preloading the current board failed", "family", name, "err", err)
			continue
		}
		s.index.Get(rc.b.name(), func() indexfeed.Spec { return s.indexSpec(rc) })
	}
}

// Index is the gateway's read index (nil when no family keeps one): tests
// and the status page ask it how it stands.
func (s *Service) Index() *indexfeed.Index { return s.index }

package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// readCtx carries one read's board, options and the metadata it answers with.
type readCtx struct {
	b       *board
	o       ReadOptions
	replica bool
	meta    ReadMeta
	pb      *readplan.Board
}

// plan is the read's view for internal/readplan: its shard keys (built once
// per read) and options.
func (rc *readCtx) plan(s *Service) *readplan.Board {
	if rc.pb == nil || rc.pb.Replica != rc.replica {
		keys := make([]string, rc.b.n)
		for i := range keys {
			keys[i] = rc.key(s, i)
		}
		rc.pb = &readplan.Board{Keys: keys}
		if rc.b.fam.enc.Cols != nil {
			rc.pb.Cols = make([]string, rc.b.n)
			for i, k := range keys {
				rc.pb.Cols[i] = shard.ColsKey(k)
			}
		}
	}
	rc.pb.Replica, rc.pb.AllowPartial = rc.replica, rc.o.AllowPartial
	return rc.pb
}

func (s *Service) startRead(ctx context.Context, ref BoardRef, o ReadOptions) (*readCtx, error) {
	switch o.Consistency {
	case ConsistencyDefault, ConsistencyCached, ConsistencyReplica, ConsistencyPrimary, ConsistencyIndex:
	default:
		return nil, rank.Invalid("consistency", "consistency must be cached, replica, primary or index")
	}
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	rc := &readCtx{b: b, o: o}
	// The source starts as the masters; serve (consistency.go) sets the level
	// that really answered (cache, replica or primary).
	rc.meta = ReadMeta{Board: b.name(), Source: SourcePrimary, AsOf: s.now().UTC()}
	return rc, nil
}

func (rc *readCtx) key(s *Service, i int) string { return s.layout.ZKey(rc.b.b, i, rc.b.n) }

// partial records shards that did not answer, merged across the fan-outs of
// one read, sorted and without repeats.
func (rc *readCtx) partial(missing []int) {
	if len(missing) == 0 {
		return
	}
	rc.meta.Partial = true
	all := append(append([]int(nil), rc.meta.MissingShards...), missing...)
	sort.Ints(all)
	rc.meta.MissingShards = slices.Compact(all)
}

// toEntries turns merged items into entries (points decoded; on a family
// with sort columns the stored member split into user and columns).
func (rc *readCtx) toEntries(items []rank.Item) []rank.Entry {
	out := make([]rank.Entry, len(items))
	cols := rc.b.fam.enc.Cols
	for i, it := range items {
		out[i] = rank.Entry{User: it.Member, Points: rc.b.fam.enc.PointsOf(it.Score)}
		if cols != nil {
			out[i] = colEntry(cols, out[i], it.Member)
		}
	}
	return out
}

// colEntry fills an entry of a family with sort columns from its stored member.
func colEntry(cols *rank.Columns, e rank.Entry, stored string) rank.Entry {
	user, vals, _, ok := cols.Split(stored)
	if !ok {
		// Not written by columns.lua: shown as stored, never dropped.
		return e
	}
	e.User, e.Columns, e.ColKey = user, cols.Map(vals), cols.Key(stored)
	return e
}

// sameStanding: two entries are equal on points and every column.
func sameStanding(a, b rank.Entry) bool { return a.Points == b.Points && a.ColKey == b.ColKey }

// seekAll runs one seek on every shard and merges the first want items
// (readplan.SeekAll: a first round of FirstDepth per shard, a second round
// only on the shards that may hold more of the answer). It returns the merged
// items and Σ start and Σ more of the first round.
func (s *Service) seekAll(ctx context.Context, rc *readCtx, op string, a store.SeekArgs, want int) ([]rank.Item, int64, int64, error) {
	r, err := s.rp.SeekAll(ctx, op, rc.plan(s), a, want)
	if err != nil {
		return nil, 0, 0, err
	}
	rc.partial(r.Missing)
	return r.Items, r.Start, r.More, nil
}

func (s *Service) checkLimit(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return rank.Invalid(field, "%s must be within %d..%d", field, lo, hi)
	}
	return nil
}

// Top returns the first limit entries of a board.
func (s *Service) Top(ctx context.Context, ref BoardRef, limit int, o ReadOptions) (Page, error) {
	if err := s.checkLimit("limit", limit, 1, s.cfg.Limits.MaxTop); err != nil {
		return Page{}, err
	}
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return Page{}, err
	}
	return serve(ctx, s, rc, "top", ConsistencyCached, func() string { return cacheKey(rc, "top", strconv.Itoa(limit)) },
		func(ctx context.Context, rc *readCtx) (Page, error) {
			items, _, _, err := s.seekAll(ctx, rc, "top", store.SeekArgs{Mode: store.SeekTop}, limit)
			if err != nil {
				return Page{}, err
			}
			entries := rc.toEntries(items)
			rank.FillRanks(entries, 0, 0, rc.b.fam.mode)
			return s.finishPage(ctx, rc, "top", entries, "")
		}, s.topIndex(limit))
}

// finishPage adds profiles and metadata.
func (s *Service) finishPage(ctx context.Context, rc *readCtx, op string, entries []rank.Entry, next string) (Page, error) {
	s.m.returned.WithLabelValues(op).Add(float64(len(entries)))
	if err := s.addProfiles(ctx, rc, entries); err != nil {
		return Page{}, err
	}
	if err := s.addMetadata(ctx, rc, entries); err != nil {
		return Page{}, err
	}
	return Page{ReadMeta: rc.meta, Entries: entries, NextCursor: next}, nil
}

// addMetadata (metadata=1) reads the entries' metadata from their home
// shards' metadata hashes: one HMGET per shard that holds any, in per-node
// pipelines.
func (s *Service) addMetadata(ctx context.Context, rc *readCtx, entries []rank.Entry) error {
	if !rc.o.Metadata || len(entries) == 0 {
		return nil
	}
	pb := rc.plan(s)
	byShard := make([][]int, rc.b.n)
	for i, e := range entries {
		h := shardOf(e.User, rc.b.n)
		byShard[h] = append(byShard[h], i)
	}
	var shards []int
	var reads []store.ShardRead
	for h, idx := range byShard {
		if len(idx) == 0 {
			continue
		}
		users := make([]string, len(idx))
		for k, i := range idx {
			users[k] = entries[i].User
		}
		shards = append(shards, h)
		reads = append(reads, store.ShardRead{Kind: store.ReadHash, Key: shard.MdKey(pb.Keys[h]), Members: users})
	}
	res, missing, err := s.rp.Fanout(ctx, "metadata", pb, shards, reads)
	if err != nil {
		return err
	}
	rc.partial(missing)
	for j, h := range shards {
		if res[j].Err != nil {
			continue
		}
		for k, i := range byShard[h] {
			if v := res[j].Values[k]; v != "" {
				entries[i].Metadata = json.RawMessage(v)
			}
		}
	}
	return nil
}

func (s *Service) addProfiles(ctx context.Context, rc *readCtx, entries []rank.Entry) error {
	if !rc.o.Profiles || len(entries) == 0 {
		return nil
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = s.layout.Profile(e.User)
	}
	ps, err := s.readBE.Profiles(ctx, keys, rc.replica)
	if err != nil {
		return rank.Unavailable(err, "reading profiles")
	}
	for i := range entries {
		entries[i].Profile = ps[i]
	}
	return nil
}

// Entries returns a page by cursor (keyset) or by offset (realtime).
func (s *Service) Entries(ctx context.Context, ref BoardRef, q PageQuery, o ReadOptions) (Page, error) {
	if err := s.checkLimit("limit", q.Limit, 1, s.cfg.Limits.MaxTop); err != nil {
		return Page{}, err
	}
	if q.Snapshot != "" && q.Cursor != "" {
		return Page{}, rank.Invalid("cursor", "snapshot pages use offset, not cursor")
	}
	if q.Cursor != "" && q.HasOffset {
		return Page{}, rank.Invalid("offset", "give either cursor or offset, not both")
	}
	if q.HasOffset && q.Offset < 0 {
		return Page{}, rank.Invalid("offset", "offset must be ≥ 0")
	}
	if q.HasOffset && q.Offset > s.cfg.Limits.MaxOffset {
		return Page{}, &rank.Error{Code: rank.CodeOffsetTooDeep, Field: "offset",
			Message: "offset must be ≤ " + strconv.Itoa(s.cfg.Limits.MaxOffset) + "; use cursor pages to go deeper"}
	}
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return Page{}, err
	}
	if q.Snapshot != "" {
		return s.snapshotPage(ctx, rc, q)
	}
	scope := "entries\x00" + rc.b.name()
	if q.HasOffset {
		return serve(ctx, s, rc, "entries_offset", ConsistencyCached,
			func() string { return cacheKey(rc, "offset", strconv.Itoa(q.Offset), strconv.Itoa(q.Limit)) },
			func(ctx context.Context, rc *readCtx) (Page, error) {
				want := q.Offset + q.Limit
				items, _, _, err := s.seekAll(ctx, rc, "entries_offset", store.SeekArgs{Mode: store.SeekTop}, want)
				if err != nil {
					return Page{}, err
				}
				entries := rc.toEntries(items)
				rank.FillRanks(entries, 0, 0, rc.b.fam.mode)
				entries = entries[min(q.Offset, len(entries)):]
				return s.finishPage(ctx, rc, "entries_offset", entries, "")
			}, s.offsetIndex(q.Offset, q.Limit))
	}
	a := store.SeekArgs{Mode: store.SeekTop}
	var cur *cursor
	if q.Cursor != "" {
		var err error
		if cur, a, err = rc.afterCursor(scope, q.Cursor); err != nil {
			return Page{}, err
		}
	}
	return serve(ctx, s, rc, "entries_cursor", ConsistencyCached,
		func() string { return cacheKey(rc, "cursor", q.Cursor, strconv.Itoa(q.Limit)) },
		func(ctx context.Context, rc *readCtx) (Page, error) {
			return s.keysetPage(ctx, rc, "entries_cursor", scope, a, cur, q.Limit)
		}, s.keysetIndex("entries_cursor", scope, cur, nil, q.Limit))
}

// afterCursor decodes a page's cursor (of scope) and answers it with the
// seek that starts right after it.
func (rc *readCtx) afterCursor(scope, token string) (*cursor, store.SeekArgs, error) {
	c, err := decodeCursor(scope, token, rc.validStored)
	if err != nil {
		return nil, store.SeekArgs{}, err
	}
	a := readplan.MoreThan(rc.b.fam.enc, rank.Item{Score: c.Score, Member: c.Member})
	a.Mode, a.Score, a.Member = store.SeekAfter, c.Score, c.Member
	return &c, a, nil
}

// pageOf cuts items read one past a page of limit to the page, and answers
// the cursor of the next page ("" when no entry follows).
func pageOf(scope string, items []rank.Item, limit int) ([]rank.Item, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	last := items[limit-1]
	return items, encodeCursor(scope, cursor{Score: last.Score, Member: last.Member})
}

// keysetPage reads limit+1 entries after a cursor (or from a start), fills
// positions and ranks, and makes the next cursor when more entries follow.
func (s *Service) keysetPage(ctx context.Context, rc *readCtx, op, scope string, a store.SeekArgs, cur *cursor, limit int) (Page, error) {
	items, start, more, err := s.seekAll(ctx, rc, op, a, limit+1)
	if err != nil {
		return Page{}, err
	}
	items, next := pageOf(scope, items, limit)
	entries := rc.toEntries(items)
	moreFirst := start // every member ahead of the first entry has strictly more points…
	if cur != nil && len(entries) > 0 && sameStanding(entries[0], rc.toEntries([]rank.Item{{Score: cur.Score, Member: cur.Member}})[0]) {
		moreFirst = more // …unless it ties with the cursor's points (and columns).
	}
	rank.FillRanks(entries, start, moreFirst, rc.b.fam.mode)
	return s.finishPage(ctx, rc, op, entries, next)
}

// Range returns the entries whose points lie in [Min, Max], in board order.
func (s *Service) Range(ctx context.Context, ref BoardRef, q RangeQuery, o ReadOptions) (Page, error) {
	if err := s.checkLimit("limit", q.Limit, 1, s.cfg.Limits.MaxTop); err != nil {
		return Page{}, err
	}
	if q.Min > q.Max {
		return Page{}, rank.Invalid("min", "min must be ≤ max")
	}
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return Page{}, err
	}
	enc := rc.b.fam.enc
	lo, hi, ok := s.band(enc, q.Min, q.Max)
	if !ok {
		return s.finishPage(ctx, rc, "range", []rank.Entry{}, "")
	}
	scope := "range\x00" + rc.b.name() + "\x00" + strconv.FormatInt(q.Min, 10) + "\x00" + strconv.FormatInt(q.Max, 10)
	a := store.SeekArgs{Mode: store.SeekLE, Score: hi, StopMin: &lo}
	var cur *cursor
	if q.Cursor != "" {
		var err error
		if cur, a, err = rc.afterCursor(scope, q.Cursor); err != nil {
			return Page{}, err
		}
		a.StopMin = &lo
	}
	return serve(ctx, s, rc, "range", ConsistencyCached,
		func() string {
			return cacheKey(rc, "range", strconv.FormatInt(q.Min, 10), strconv.FormatInt(q.Max, 10), q.Cursor, strconv.Itoa(q.Limit))
		},
		func(ctx context.Context, rc *readCtx) (Page, error) {
			return s.keysetPage(ctx, rc, "range", scope, a, cur, q.Limit)
		}, s.keysetIndex("range", scope, cur, &[2]int64{lo, hi}, q.Limit))
}

// band clamps [min, max] points to the family's range and returns the stored
// score interval; ok is false when nothing can lie in it.
func (s *Service) band(enc rank.Encoding, minP, maxP int64) (lo, hi int64, ok bool) {
	minP, maxP = max(minP, -enc.MaxPoints), min(maxP, enc.MaxPoints)
	if minP > maxP {
		return 0, 0, false
	}
	lo, hi = enc.ScoreBand(minP, maxP)
	return lo, hi, true
}

// Count counts members whose points lie in [min, max].
func (s *Service) Count(ctx context.Context, ref BoardRef, minP, maxP int64, o ReadOptions) (Count, error) {
	if minP > maxP {
		return Count{}, rank.Invalid("min", "min must be ≤ max")
	}
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return Count{}, err
	}
	lo, hi, ok := s.band(rc.b.fam.enc, minP, maxP)
	return serve(ctx, s, rc, "count", ConsistencyCached, func() string { return cacheKey(rc, "count", strconv.FormatInt(minP, 10), strconv.FormatInt(maxP, 10)) },
		func(ctx context.Context, rc *readCtx) (Count, error) {
			if !ok {
				return Count{ReadMeta: rc.meta}, nil
			}
			n, err := s.countIn(ctx, rc, lo, hi)
			if err != nil {
				return Count{}, err
			}
			return Count{ReadMeta: rc.meta, Count: n}, nil
		}, s.countIndex(lo, hi, ok))
}

// countIn sums the members with stored score in [lo, hi] over every shard.
func (s *Service) countIn(ctx context.Context, rc *readCtx, lo, hi int64) (int64, error) {
	n, missing, err := s.rp.Count(ctx, "count", rc.plan(s), lo, hi)
	if err != nil {
		return 0, err
	}
	rc.partial(missing)
	return n, nil
}

// validStored reports whether a cursor's member can be a stored member of
// the board's family.
func (rc *readCtx) validStored(m string) bool {
	if c := rc.b.fam.enc.Cols; c != nil {
		return c.Valid(m)
	}
	return rank.ValidMember(m)
}

// home finds a member's stored score (and, on a family with sort columns,
// its stored member) on its own shard.
func (s *Service) home(ctx context.Context, rc *readCtx, user string) (rank.Item, error) {
	if !rank.ValidMember(user) {
		return rank.Item{}, rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}")
	}
	it, found, err := s.rp.FindOne(ctx, rc.plan(s), shardOf(user, rc.b.n), user)
	if err != nil {
		return rank.Item{}, err
	}
	if !found {
		return rank.Item{}, rank.Errorf(rank.CodeNotRanked, "%s is not on board %s", user, rc.b.name())
	}
	return it, nil
}

// probeAll asks every shard where each (score, member) stands.
func (s *Service) probeAll(ctx context.Context, rc *readCtx, op string, items []rank.Item) (readplan.Standing, error) {
	st, missing, err := s.rp.Probe(ctx, op, rc.plan(s), rc.b.fam.enc, items)
	if err != nil {
		return readplan.Standing{}, err
	}
	rc.partial(missing)
	return st, nil
}

func (rc *readCtx) rankOf(st readplan.Standing, j int) int64 { return st.RankOf(rc.b.fam.mode, j) }

// Member returns a member's points, position, rank, the board size and the
// percentile: the share of the board that ranks strictly behind the member
// (fewer points under competition ranking, later positions under ordinal).
func (s *Service) Member(ctx context.Context, ref BoardRef, user string, o ReadOptions) (MemberStanding, error) {
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return MemberStanding{}, err
	}
	return serve(ctx, s, rc, "member", ConsistencyPrimary, func() string { return cacheKey(rc, "member", user) },
		func(ctx context.Context, rc *readCtx) (MemberStanding, error) { return s.member(ctx, rc, user) }, s.memberIndex(user))
}

func (s *Service) member(ctx context.Context, rc *readCtx, user string) (MemberStanding, error) {
	it, err := s.home(ctx, rc, user)
	if err != nil {
		return MemberStanding{}, err
	}
	st, err := s.probeAll(ctx, rc, "member", []rank.Item{it})
	if err != nil {
		return MemberStanding{}, err
	}
	return s.standing(ctx, rc, user, it, st.Ahead[0], st.Card, st.More[0], st.Least[0])
}

// standing assembles a member's standing from its stored item, its
// position, the board's size, and the members strictly better and at least
// as good (points, and columns), then adds its profile and metadata.
func (s *Service) standing(ctx context.Context, rc *readCtx, user string, it rank.Item, pos, card, more, least int64) (MemberStanding, error) {
	o := rc.o
	rk := pos + 1
	if rc.b.fam.mode == rank.Competition {
		rk = more + 1
	}
	ms := MemberStanding{ReadMeta: rc.meta, User: user, Points: rc.b.fam.enc.PointsOf(it.Score),
		Position: pos, Rank: rk, Members: card, Columns: rc.toEntries([]rank.Item{it})[0].Columns}
	behind := card - pos - 1
	if rc.b.fam.mode == rank.Competition {
		behind = card - least
	}
	if card > 0 && behind > 0 {
		ms.Percentile = float64(behind*10000/card) / 100
	}
	if o.Profiles || o.Metadata {
		entries := []rank.Entry{{User: user}}
		if err := s.addProfiles(ctx, rc, entries); err != nil {
			return MemberStanding{}, err
		}
		if err := s.addMetadata(ctx, rc, entries); err != nil {
			return MemberStanding{}, err
		}
		ms.Profile, ms.Metadata = entries[0].Profile, entries[0].Metadata
	}
	ms.ReadMeta = rc.meta
	return ms, nil
}

// Around returns the board's positions max(0, p−radius) … p+radius around a
// member at position p: a seek up and a seek down from its (score, member) on
// every shard, merged.
func (s *Service) Around(ctx context.Context, ref BoardRef, user string, radius int, o ReadOptions) (Page, error) {
	if err := s.checkLimit("radius", radius, 0, s.cfg.Limits.MaxRadius); err != nil {
		return Page{}, err
	}
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return Page{}, err
	}
	return serve(ctx, s, rc, "around", ConsistencyPrimary, func() string { return cacheKey(rc, "around", user, strconv.Itoa(radius)) },
		func(ctx context.Context, rc *readCtx) (Page, error) { return s.around(ctx, rc, user, radius) }, s.aroundIndex(user, radius))
}

func (s *Service) around(ctx context.Context, rc *readCtx, user string, radius int) (Page, error) {
	it, err := s.home(ctx, rc, user)
	if err != nil {
		return Page{}, err
	}
	w, err := s.rp.Around(ctx, "around", rc.plan(s), rc.b.fam.enc, it.Score, it.Member, radius, rc.b.fam.mode == rank.Competition)
	if err != nil {
		return Page{}, err
	}
	rc.partial(w.Missing)
	items := w.Items
	entries := rc.toEntries(items)
	first := w.First
	moreFirst := w.More // members strictly better (points, columns) than the member itself
	if rc.b.fam.mode == rank.Competition && !sameStanding(entries[0], entries[w.Up]) {
		// The window starts above the member's standing. When the entry just
		// before it stands otherwise (or there is none), every member ahead of
		// the window is strictly better; else count who is ahead of that.
		// The shards' replies may already say (readplan.Window.FirstMore).
		switch {
		case w.Prev == nil || !sameStanding(rc.toEntries([]rank.Item{*w.Prev})[0], entries[0]):
			moreFirst = first
		case w.FirstKnown:
			moreFirst = w.FirstMore
		default:
			if moreFirst, err = s.countBetter(ctx, rc, items[0]); err != nil {
				return Page{}, err
			}
		}
	}
	rank.FillRanks(entries, first, moreFirst, rc.b.fam.mode)
	return s.finishPage(ctx, rc, "around", entries, "")
}

// countBetter counts members strictly better than it: more points, or on a
// family with sort columns better on (points, columns) — a position probe.
func (s *Service) countBetter(ctx context.Context, rc *readCtx, it rank.Item) (int64, error) {
	enc := rc.b.fam.enc
	if enc.Cols != nil {
		st, err := s.probeAll(ctx, rc, "around_more", []rank.Item{it})
		if err != nil {
			return 0, err
		}
		return st.More[0], nil
	}
	return s.countIn(ctx, rc, enc.MinScoreAbove(enc.PointsOf(it.Score)), rank.MaxSafe)
}

// Lookup returns the listed members that are on the board, in board order,
// with their positions and ranks (a friends board).
func (s *Service) Lookup(ctx context.Context, ref BoardRef, users []string, o ReadOptions) (Page, error) {
	if len(users) == 0 {
		return Page{}, rank.Invalid("users", "users must list at least one member")
	}
	if len(users) > s.cfg.Limits.MaxLookup {
		return Page{}, rank.Invalid("users", "at most %d users", s.cfg.Limits.MaxLookup)
	}
	seen := make(map[string]struct{}, len(users))
	uniq := users[:0:0]
	for i, u := range users {
		if !rank.ValidMember(u) {
			return Page{}, rank.Invalid("users["+strconv.Itoa(i)+"]", "user must match [A-Za-z0-9_.@-]{1,64}")
		}
		if _, dup := seen[u]; !dup {
			seen[u] = struct{}{}
			uniq = append(uniq, u)
		}
	}
	rc, err := s.startRead(ctx, ref, o)
	if err != nil {
		return Page{}, err
	}
	return serve(ctx, s, rc, "lookup", ConsistencyPrimary,
		func() string {
			k := append([]string(nil), uniq...)
			sort.Strings(k)
			return cacheKey(rc, "lookup", k...)
		},
		func(ctx context.Context, rc *readCtx) (Page, error) { return s.lookup(ctx, rc, uniq) }, s.lookupIndex(uniq))
}

func (s *Service) lookup(ctx context.Context, rc *readCtx, uniq []string) (Page, error) {
	byShard := make([][]string, rc.b.n)
	for _, u := range uniq {
		i := shardOf(u, rc.b.n)
		byShard[i] = append(byShard[i], u)
	}
	its, found, missing, err := s.rp.Find(ctx, "lookup_scores", rc.plan(s), byShard)
	if err != nil {
		return Page{}, err
	}
	rc.partial(missing)
	items := readplan.FoundItems(byShard, its, found)
	if len(items) == 0 {
		return s.finishPage(ctx, rc, "lookup", []rank.Entry{}, "")
	}
	sort.Slice(items, func(a, b int) bool { return rank.Before(items[a], items[b]) })
	st, err := s.probeAll(ctx, rc, "lookup", items)
	if err != nil {
		return Page{}, err
	}
	entries := rc.toEntries(items)
	for j := range entries {
		entries[j].Position = st.Ahead[j]
		entries[j].Rank = rc.rankOf(st, j)
	}
	return s.finishPage(ctx, rc, "lookup", entries, "")
}

// Period answers where a family's period stands at an instant.
func (s *Service) Period(ctx context.Context, familyName string, at time.Time) (PeriodInfo, error) {
	f, err := s.family(familyName)
	if err != nil {
		return PeriodInfo{}, err
	}
	now := s.now()
	if at.IsZero() {
		at = now
	}
	p := f.spec.At(at)
	info := PeriodInfo{Family: f.cfg.Name, Kind: f.cfg.Period, Period: p.ID, State: "open"}
	if !p.End.IsZero() {
		st, en, wu := p.Start, p.End, p.End.Add(f.cfg.Grace)
		info.Starts, info.Ends, info.WritesUntil = &st, &en, &wu
		if next := f.spec.Next(p); next.ID != "" && !next.Start.IsZero() {
			ns := next.Start
			info.NextPeriod, info.NextReset = next.ID, &ns
		}
	}
	switch {
	case f.closedAt(p, now):
		info.State = "closed"
	case !p.Contains(at) && at.Before(p.Start):
		info.State = "upcoming" // before the first season
	}
	info.BetweenSeasons = !p.Contains(at) && !at.Before(p.End)
	ps, err := s.lifeBE.Period(ctx, s.layout.Period(f.cfg.Name, p.ID))
	if err != nil {
		return PeriodInfo{}, rank.Unavailable(err, "reading period %s", p.ID)
	}
	if ps.State != "" && ps.State != "open" {
		info.State = ps.State
	}
	return info, nil
}

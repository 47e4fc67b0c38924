// Package readplan is the sharded read plan: how a read of a board split into
// n shards becomes per-node pipelines and an exact merged answer. The gateway
// (internal/gateway) and the load tool's baseline (loadtest) both run it, so
// the baseline measures the gateway's HTTP layer and nothing else.
//
// Every fan-out phase (first round, second round, position probes, counts,
// score lookups) goes out as one pipeline per Redis node — the nodes in
// parallel (a goroutine for each but the first, which runs on the caller's),
// each under its own deadline — never a goroutine and a round trip per shard. Errors still name their shard, the first one cancels the other
// nodes, and with AllowPartial a failed node costs only its own shards.
//
// It imports internal/store, merge and rank; it must not import net/http,
// internal/gateway or internal/cache (the gateway wraps it in those).
package readplan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/merge"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
)

// Backend is the Redis work a read plan needs; *store.Store implements it.
type Backend interface {
	// NodeOf names the node serving key ("" for one node or unknown).
	NodeOf(ctx context.Context, key string) string
	// ReadShards runs reads as one pipeline and writes out[i] for reads[i].
	ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply)
}

var _ Backend = (*store.Store)(nil)

// Observer sees a plan's work; nil observes nothing.
type Observer interface {
	// Fanout: one fan-out phase asked this many shards.
	Fanout(op string, shards int)
	// RoundTrip: one node's pipeline took d.
	RoundTrip(op string, d time.Duration)
	// ShardError: one shard's read failed (not counted when cancelled).
	ShardError(op string)
	// Fetched: entries read by ordered reads.
	Fetched(op string, n int)
}

// Reader runs read plans against a Backend.
type Reader struct {
	Backend Backend
	// Timeout bounds each node's round trip.
	Timeout time.Duration
	Obs     Observer
	// Band is how many members of a probe's points group a native probe
	// reads at most (0: store.DefaultBand).
	Band int
	// Scripts sends every position probe as position.lua and every
	// around-me window as seek.lua (the yardstick's comparison of the two
	// forms); by default probes (up to NativeProbes) and windows go native.
	Scripts bool
}

// Board is one read's view of a board: its shard keys (index = shard) and
// the read's options.
type Board struct {
	Keys []string
	// Cols (a family with sort columns) are the shards' user → stored-member
	// prefix hashes, index = shard; nil without columns.
	Cols         []string
	Replica      bool
	AllowPartial bool
}

// N is the board's shard count.
func (b *Board) N() int { return len(b.Keys) }

// Unavailable turns a backend failure into a 503 unless it already carries a
// code (or is the caller's own cancellation).
func Unavailable(err error) error {
	var re *rank.Error
	if errors.As(err, &re) {
		return err
	}
	return rank.Unavailable(err, "a shard did not answer; retry")
}

// group is the reads of one node: indexes into the fan-out's reads.
type group struct {
	node string
	idx  []int
}

// Fanout runs reads (reads[j] reads shard shards[j]) as one pipeline per node,
// the nodes in parallel, each under its own deadline, and returns every
// reply indexed like reads. By default the first failure cancels the other
// nodes and fails the read (exact ranks need every shard); errors name their
// shard. With b.AllowPartial failures are collected: replies carry their own
// Err and missing lists the shards that did not answer (sorted, once each);
// if none answered it fails.
func (r *Reader) Fanout(ctx context.Context, op string, b *Board, shards []int, reads []store.ShardRead) (out []store.ShardReply, missing []int, err error) {
	n := len(reads)
	if r.Obs != nil {
		r.Obs.Fanout(op, len(shards))
	}
	out = make([]store.ShardReply, n)
	groups := r.group(ctx, reads)
	run := func(ctx context.Context, g group) error {
		cctx, cancel := context.WithTimeout(ctx, r.Timeout)
		defer cancel()
		start := time.Now()
		if len(g.idx) == n { // one node: no regrouping
			r.Backend.ReadShards(cctx, reads, b.Replica, out)
		} else {
			rs := make([]store.ShardRead, len(g.idx))
			for k, j := range g.idx {
				rs[k] = reads[j]
			}
			os := make([]store.ShardReply, len(g.idx))
			r.Backend.ReadShards(cctx, rs, b.Replica, os)
			for k, j := range g.idx {
				out[j] = os[k]
			}
		}
		if r.Obs != nil {
			r.Obs.RoundTrip(op, time.Since(start))
		}
		var first error
		for _, j := range g.idx {
			e := out[j].Err
			if e == nil {
				continue
			}
			if ctx.Err() == nil && !errors.Is(e, store.ErrSnapshotExpired) && r.Obs != nil {
				r.Obs.ShardError(op)
			}
			out[j].Err = fmt.Errorf("%s from shard %d: %w", op, shards[j], e)
			if first == nil {
				first = out[j].Err
			}
		}
		return first
	}
	if !b.AllowPartial {
		if len(groups) == 1 {
			if err := run(ctx, groups[0]); err != nil {
				return nil, nil, Unavailable(err)
			}
			return out, nil, nil
		}
		// The first failure cancels the other nodes and is the answer (as
		// errgroup.WithContext does); the first node runs on this goroutine.
		gctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var once sync.Once
		var first error
		done := func(err error) {
			if err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}
		var wg sync.WaitGroup
		for _, g := range groups[1:] {
			wg.Go(func() { done(run(gctx, g)) })
		}
		done(run(gctx, groups[0]))
		wg.Wait()
		if first != nil {
			return nil, nil, Unavailable(first)
		}
		return out, nil, nil
	}
	var wg sync.WaitGroup
	for _, g := range groups[1:] {
		wg.Go(func() { _ = run(ctx, g) })
	}
	_ = run(ctx, groups[0])
	wg.Wait()
	var errs []error
	failed := 0
	for j := range out {
		if out[j].Err != nil {
			failed++
			errs = append(errs, out[j].Err)
			missing = append(missing, shards[j])
		}
	}
	if failed == n && n > 0 {
		return nil, nil, Unavailable(errors.Join(errs...))
	}
	slices.Sort(missing)
	return out, slices.Compact(missing), nil
}

// group splits reads by the node that serves them, in first-seen order.
func (r *Reader) group(ctx context.Context, reads []store.ShardRead) []group {
	var gs []group
	for j := range reads {
		node := r.Backend.NodeOf(ctx, reads[j].Key)
		k := 0
		for k < len(gs) && gs[k].node != node {
			k++
		}
		if k == len(gs) {
			gs = append(gs, group{node: node, idx: make([]int, 0, len(reads))})
		}
		gs[k].idx = append(gs[k].idx, j)
	}
	return gs
}

// AllShards is 0..n-1.
func AllShards(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// mergers recycles merge state so a fan-out allocates only its result.
var mergers = sync.Pool{New: func() any { return merge.NewMerger(rank.Before) }}

// MergeInto merges the first want items of lists into dst[:0].
func MergeInto(dst []rank.Item, lists [][]rank.Item, want int) []rank.Item {
	m := mergers.Get().(*merge.Merger[rank.Item])
	defer mergers.Put(m)
	return m.Merge(dst[:0], lists, want)
}

// FirstDepth is how many entries to ask each of n shards for when the merged
// answer needs want: the expected share want/n plus 2.5 standard deviations
// of a binomial spread (members hash uniformly), plus one. Shards that turn
// out to hold more of the answer are asked again (SeekAll), so the depth only
// trades round trips for entries read, never exactness.
func FirstDepth(want, n int) int {
	if n <= 1 || want <= 1 {
		return want
	}
	p := 1 / float64(n)
	mean := float64(want) * p
	sd := math.Sqrt(float64(want) * p * (1 - p))
	return min(want, int(math.Ceil(mean+2.5*sd))+1)
}

// Seeked is the answer of SeekAll.
type Seeked struct {
	Items []rank.Item
	// Start and More are Σ start and Σ more of the first round: the position
	// of the first item and the count of the cursor's better-pointed members.
	Start, More int64
	Missing     []int
}

// SeekAll runs one seek on every shard and merges the first want items. It
// asks each shard for FirstDepth entries first (from the head of a shard that
// is one ZREVRANGE), then asks again — from its last returned entry — only
// the shards whose last entry still ranks ahead of the current want-th
// merged entry, for as many as they could still contribute.
func (r *Reader) SeekAll(ctx context.Context, op string, b *Board, a store.SeekArgs, want int) (Seeked, error) {
	n := b.N()
	first := a
	first.Limit = FirstDepth(want, n)
	reads := make([]store.ShardRead, n)
	for i := range reads {
		reads[i] = store.ShardRead{Kind: store.ReadSeek, Key: b.Keys[i], Seek: first}
	}
	res, missing, err := r.Fanout(ctx, op, b, AllShards(n), reads)
	if err != nil {
		return Seeked{}, err
	}
	lists := make([][]rank.Item, n)
	var out Seeked
	fetched := 0
	for i := range res {
		if res[i].Err != nil {
			continue
		}
		s := &res[i].Seek
		lists[i] = s.Items
		out.Start += s.Start
		out.More += s.More
		fetched += len(s.Items)
	}
	items := MergeInto(make([]rank.Item, 0, want), lists, want)
	if first.Limit < want {
		var again []int
		for i, l := range lists {
			if res[i].Err != nil || len(l) < first.Limit {
				continue // failed, or exhausted: nothing more to give
			}
			if len(items) < want || rank.Before(l[len(l)-1], items[want-1]) {
				again = append(again, i)
			}
		}
		if len(again) > 0 {
			reads2 := reads[:len(again)]
			for j, i := range again {
				last := lists[i][len(lists[i])-1]
				reads2[j] = store.ShardRead{Kind: store.ReadSeek, Key: b.Keys[i], Seek: store.SeekArgs{
					Mode: store.SeekAfter, Score: last.Score, Member: last.Member, Limit: want - len(lists[i]), StopMin: a.StopMin}}
			}
			res2, missing2, err := r.Fanout(ctx, op+"_more", b, again, reads2)
			switch {
			case err != nil && b.AllowPartial && ctx.Err() == nil:
				// Every re-asked shard failed: keep what they gave at first.
				missing = append(missing, again...)
			case err != nil:
				return Seeked{}, err
			default:
				for j := range res2 {
					if res2[j].Err == nil {
						i := again[j]
						lists[i] = append(lists[i][:len(lists[i]):len(lists[i])], res2[j].Seek.Items...)
						fetched += len(res2[j].Seek.Items)
					}
				}
				missing = append(missing, missing2...)
			}
			items = MergeInto(items, lists, want)
		}
	}
	if r.Obs != nil {
		r.Obs.Fetched(op, fetched)
	}
	slices.Sort(missing)
	out.Items, out.Missing = items, slices.Compact(missing)
	return out, nil
}

// Count sums the members with stored score in [lo, hi] over every shard.
func (r *Reader) Count(ctx context.Context, op string, b *Board, lo, hi int64) (int64, []int, error) {
	reads := make([]store.ShardRead, b.N())
	for i := range reads {
		reads[i] = store.ShardRead{Kind: store.ReadCount, Key: b.Keys[i], Lo: lo, Hi: hi}
	}
	res, missing, err := r.Fanout(ctx, op, b, AllShards(b.N()), reads)
	if err != nil {
		return 0, nil, err
	}
	var n int64
	for i := range res {
		if res[i].Err == nil {
			n += res[i].N
		}
	}
	return n, missing, nil
}

// Score reads a member's stored score on its home shard; found is false
// when the member is not on the board.
func (r *Reader) Score(ctx context.Context, b *Board, home int, user string) (score int64, found bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var out [1]store.ShardReply
	r.Backend.ReadShards(cctx, []store.ShardRead{{Kind: store.ReadScores, Key: b.Keys[home], Members: []string{user}}}, b.Replica, out[:])
	if out[0].Err != nil {
		return 0, false, rank.Unavailable(out[0].Err, "score from shard %d", home)
	}
	return out[0].Scores[0], out[0].Found[0], nil
}

// Find reads members' stored items grouped by home shard (byShard[i] lists
// shard i's users), one read per shard that has any: ZMSCORE, or on a family
// with sort columns (b.Cols) members.lua, which also names each user's
// stored member. found[i][k] says whether byShard[i][k] is on the board;
// items[i][k] is its (score, stored member).
func (r *Reader) Find(ctx context.Context, op string, b *Board, byShard [][]string) (items [][]rank.Item, found [][]bool, missing []int, err error) {
	var shards []int
	var reads []store.ShardRead
	for i, ms := range byShard {
		if len(ms) > 0 {
			shards = append(shards, i)
			rd := store.ShardRead{Kind: store.ReadScores, Key: b.Keys[i], Members: ms}
			if b.Cols != nil {
				rd.Cols = b.Cols[i]
			}
			reads = append(reads, rd)
		}
	}
	items, found = make([][]rank.Item, len(byShard)), make([][]bool, len(byShard))
	if len(reads) == 0 {
		return items, found, nil, nil
	}
	res, missing, err := r.Fanout(ctx, op, b, shards, reads)
	if err != nil {
		return nil, nil, nil, err
	}
	for j, i := range shards {
		if res[j].Err != nil {
			continue
		}
		its := make([]rank.Item, len(byShard[i]))
		for k, u := range byShard[i] {
			its[k] = rank.Item{Score: res[j].Scores[k], Member: u}
			if res[j].Stored != nil {
				its[k].Member = res[j].Stored[k]
			}
		}
		items[i], found[i] = its, res[j].Found
	}
	return items, found, missing, nil
}

// FoundItems answers the items Find found, shard by shard in byShard's
// order (nil when none was).
func FoundItems(byShard [][]string, items [][]rank.Item, found [][]bool) []rank.Item {
	var out []rank.Item
	for i, ms := range byShard {
		for j := range ms {
			if found[i] != nil && found[i][j] {
				out = append(out, items[i][j])
			}
		}
	}
	return out
}

// FindOne reads one user's stored item on its home shard; found is false
// when the user is not on the board.
func (r *Reader) FindOne(ctx context.Context, b *Board, home int, user string) (rank.Item, bool, error) {
	if b.Cols == nil {
		sc, found, err := r.Score(ctx, b, home, user)
		return rank.Item{Score: sc, Member: user}, found, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var out [1]store.ShardReply
	r.Backend.ReadShards(cctx, []store.ShardRead{{Kind: store.ReadScores, Key: b.Keys[home], Cols: b.Cols[home], Members: []string{user}}}, b.Replica, out[:])
	if out[0].Err != nil {
		return rank.Item{}, false, rank.Unavailable(out[0].Err, "score from shard %d", home)
	}
	return rank.Item{Score: out[0].Scores[0], Member: out[0].Stored[0]}, out[0].Found[0], nil
}

// Standing sums position probes over every shard.
type Standing struct {
	Card               int64
	Ahead, More, Least []int64 // per probe: ahead in order, strictly more points, at least as many
}

// RankOf is probe j's rank under mode.
func (st Standing) RankOf(mode rank.RankMode, j int) int64 {
	if mode == rank.Competition {
		return st.More[j] + 1
	}
	return st.Ahead[j] + 1
}

// NativeProbes is the most probes a read sends as native commands
// (store.ReadPlace: on each shard a ZCARD and, per probe, a ZCOUNT and a
// bounded read of the probe's points group); a read with more probes sends
// position.lua, one script per shard for all of them.
const NativeProbes = 4

// Probe asks every shard where each (score, member) stands. Up to
// NativeProbes probes go out as native commands; a shard where a probe's
// points group is too large to read whole (ShardReply.Open: the tie-group
// binary search is needed) is asked again with position.lua, in one more
// fan-out over those shards only.
func (r *Reader) Probe(ctx context.Context, op string, b *Board, enc rank.Encoding, items []rank.Item) (Standing, []int, error) {
	probes := make([]store.Probe, len(items))
	for i, it := range items {
		probes[i] = probeOf(enc, it)
	}
	kind := store.ReadPlace
	if r.Scripts || len(items) > NativeProbes {
		kind = store.ReadPositions
	}
	reads := make([]store.ShardRead, b.N())
	for i := range reads {
		reads[i] = store.ShardRead{Kind: kind, Key: b.Keys[i], Probes: probes, Band: r.Band}
	}
	res, missing, err := r.Fanout(ctx, op, b, AllShards(b.N()), reads)
	if err != nil {
		return Standing{}, nil, err
	}
	missing, err = r.scriptAgain(ctx, op, b, reads, res, missing, func(i int) store.ShardRead {
		return store.ShardRead{Kind: store.ReadPositions, Key: b.Keys[i], Probes: probes}
	})
	if err != nil {
		return Standing{}, nil, err
	}
	m := len(items)
	cols := make([]int64, 3*m)
	st := Standing{Ahead: cols[:m:m], More: cols[m : 2*m : 2*m], Least: cols[2*m:]}
	for i := range res {
		if res[i].Err != nil || res[i].Open {
			continue
		}
		p := &res[i].Positions
		st.Card += p.Card
		for j := 0; j < m; j++ {
			st.Ahead[j] += p.Ahead[j]
			st.More[j] += p.More[j]
			st.Least[j] += p.AtLeast[j]
		}
	}
	slices.Sort(missing)
	return st, slices.Compact(missing), nil
}

// scriptAgain re-asks the shards whose native read came back Open with
// their script read (script(i) for shard i) in one more fan-out over those
// shards only, and puts the answers in res. With AllowPartial a shard whose
// second read failed joins missing (its Open reply is not counted), unless
// then no shard at all answered.
func (r *Reader) scriptAgain(ctx context.Context, op string, b *Board, reads []store.ShardRead, res []store.ShardReply, missing []int, script func(i int) store.ShardRead) ([]int, error) {
	var open []int
	for i := range res {
		if res[i].Err == nil && res[i].Open {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return missing, nil
	}
	again := reads[:len(open)]
	for j, i := range open {
		again[j] = script(i)
	}
	res2, missing2, err := r.Fanout(ctx, op+"_group", b, open, again)
	switch {
	case err != nil && b.AllowPartial && ctx.Err() == nil && len(missing)+len(open) < b.N():
		return append(missing, open...), nil // every re-asked shard failed, others answered
	case err != nil:
		return nil, err
	}
	for j, i := range open {
		if res2[j].Err == nil {
			res[i] = res2[j]
		}
	}
	return append(missing, missing2...), nil
}

// Window is the answer of Around: the entries around a member in board order
// (the member included), the position of the first, and the count of members
// with strictly more points than the member.
type Window struct {
	Items []rank.Item
	Up    int // entries before the member
	First int64
	More  int64
	// Prev is the entry just before Items[0] in board order (nil at the
	// head of the board): when its points differ from Items[0]'s, every
	// member ahead of Items[0] has strictly more points.
	Prev *rank.Item
	// FirstMore, when FirstKnown, is the count of members with strictly
	// more points than Items[0] (a family without sort columns), taken from
	// the shards' own replies: a shard's entries before the member hold
	// every member between Items[0]'s points and the member's, unless the
	// shard returned all Limit of them and the farthest still has
	// Items[0]'s points or fewer (then a count fan-out must say).
	FirstMore  int64
	FirstKnown bool
	Missing    []int
}

// Around reads up to radius entries before and after (score, user) on every
// shard in per-node pipelines and merges them around the member (one more
// before, for Window.Prev). user is the stored member (on a family with sort
// columns, FindOne names it). Each shard answers natively (store.ReadWindow:
// the member's points group and the nearest entries above and below its
// score); a shard whose points group is too large to read whole is asked
// again with seek.lua's around mode (the member's place found once by the
// tie-group binary search).
//
// Like SeekAll, the native reads ask each shard for FirstDepth(radius+1, n)
// entries on either side, not radius+1: the window's 2·radius+1 entries come
// from many shards. A shard that gave all it was asked for on a side and
// could still hold entries of the window there — all of them lie within the
// merged window, or (firstMore) its farthest entry before the member still
// has the window's first points, where Window.FirstMore needs every such
// entry — is asked again, whole, with seek.lua's around mode at radius+1
// (deeper). So depth trades a rare round trip for entries read, never
// exactness. firstMore says the caller may use Window.FirstMore (competition
// ranks); without it Window.FirstKnown is whatever the replies say.
func (r *Reader) Around(ctx context.Context, op string, b *Board, enc rank.Encoding, score int64, user string, radius int, firstMore bool) (Window, error) {
	n := b.N()
	it := rank.Item{Score: score, Member: user}
	a := MoreThan(enc, it)
	a.Mode, a.Score, a.Member, a.Limit = store.SeekAround, score, user, radius+1
	script := func(i int) store.ShardRead { return store.ShardRead{Kind: store.ReadSeek, Key: b.Keys[i], Seek: a} }
	place := []store.Probe{probeOf(enc, it)}
	depth := FirstDepth(radius+1, n)
	reads := make([]store.ShardRead, n)
	for i := range reads {
		if r.Scripts {
			reads[i] = script(i)
			continue
		}
		reads[i] = store.ShardRead{Kind: store.ReadWindow, Key: b.Keys[i], Probes: place, Seek: store.SeekArgs{Limit: depth}, Band: r.Band}
	}
	res, missing, err := r.Fanout(ctx, op, b, AllShards(n), reads)
	if err != nil {
		return Window{}, err
	}
	// limits[i]: how many entries on either side shard i was asked for.
	limits := make([]int, n)
	for i := range limits {
		limits[i] = reads[i].Seek.Limit // radius+1 for a script read
		if res[i].Err == nil && res[i].Open {
			limits[i] = radius + 1 // scriptAgain asks it again with a script
		}
	}
	if missing, err = r.scriptAgain(ctx, op, b, reads, res, missing, script); err != nil {
		return Window{}, err
	}
	fetched := 0
	if depth < radius+1 {
		if missing, fetched, err = r.deeper(ctx, op, b, enc, it, res, limits, missing, radius, firstMore, script); err != nil {
			return Window{}, err
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	ups, downs := make([][]rank.Item, 0, n), make([][]rank.Item, 0, n)
	mores := make([]int64, 0, n)
	lims := make([]int, 0, n)
	var p, more int64
	for i := range res {
		if res[i].Err != nil || res[i].Open {
			continue // the shard is in missing
		}
		s := &res[i].Seek
		up := s.Items[:s.Before]
		ups, downs = append(ups, up), append(downs, s.Items[s.Before:])
		p += s.Start + int64(len(up)) // members ahead of self in shard i
		more += s.More
		mores = append(mores, s.More)
		lims = append(lims, limits[i])
		fetched += len(s.Items)
	}
	if r.Obs != nil {
		r.Obs.Fetched(op, fetched)
	}
	upM := merge.Last(nil, ups, radius+1, rank.Before)
	var prev *rank.Item
	if len(upM) > radius {
		prev, upM = &upM[0], upM[1:]
	}
	downM := merge.Merge(nil, downs, radius, rank.Before)
	items := make([]rank.Item, 0, len(upM)+1+len(downM))
	items = append(append(append(items, upM...), rank.Item{Score: score, Member: user}), downM...)
	w := Window{Items: items, Up: len(upM), First: p - int64(len(upM)), More: more, Prev: prev, Missing: missing}
	if enc.Cols == nil {
		w.FirstMore, w.FirstKnown = moreThanFirst(enc, a, items[0], ups, mores, lims)
	}
	return w, nil
}

// deeper is Around's second round: it asks again, with script(i) (seek.lua's
// around mode at radius+1), every shard i that answered natively at
// limits[i] < radius+1 and gave all limits[i] entries on a side where it
// could still hold entries of the window: its farthest entry lies inside
// the window merged from the first answers, or there are too few of them.
// With firstMore (competition ranks, no sort columns), also every shard
// whose farthest entry before the member still has the points of the
// window's first entry when Window.FirstMore will be asked for: that first
// entry has more points than the member (me) and the entry before it has
// the same. It puts the answers in res and sets their limits to radius+1;
// dropped counts the entries of the first answers it replaced (read all the
// same). With AllowPartial a shard whose second read failed joins missing
// and keeps its first answer (exact counts, a prefix of its entries), as
// SeekAll does.
//
// Deciding on the first answers is safe: more entries only move the
// window's edge, and its first entry, towards the member.
func (r *Reader) deeper(ctx context.Context, op string, b *Board, enc rank.Encoding, me rank.Item, res []store.ShardReply, limits, missing []int, radius int, firstMore bool, script func(i int) store.ShardRead) (_ []int, dropped int, err error) {
	n := len(res)
	ups, downs := make([][]rank.Item, 0, n), make([][]rank.Item, 0, n)
	for i := range res {
		if res[i].Err != nil || res[i].Open {
			continue
		}
		s := &res[i].Seek
		ups, downs = append(ups, s.Items[:s.Before]), append(downs, s.Items[s.Before:])
	}
	upM := merge.Last(nil, ups, radius+1, rank.Before)
	downM := merge.Merge(nil, downs, radius, rank.Before)
	// hi: the least stored score with more points than the window's first
	// entry, when FirstMore will be needed; no entry lies below MinInt64.
	hi := int64(math.MinInt64)
	if firstMore && enc.Cols == nil && len(upM) == radius+1 {
		prev, first := enc.PointsOf(upM[0].Score), enc.PointsOf(upM[1].Score)
		if prev == first && first != enc.PointsOf(me.Score) {
			hi = enc.MinScoreAbove(first)
		}
	}
	var again []int
	for i := range res {
		if res[i].Err != nil || res[i].Open || limits[i] > radius {
			continue
		}
		s, lim := &res[i].Seek, limits[i]
		up, down := s.Items[:s.Before], s.Items[s.Before:]
		upMore := len(up) == lim && (len(upM) <= radius || rank.Before(upM[0], up[0]) || up[0].Score < hi)
		downMore := len(down) == lim && (len(downM) < radius || rank.Before(down[lim-1], downM[radius-1]))
		if upMore || downMore {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return missing, 0, nil
	}
	reads := make([]store.ShardRead, len(again))
	for j, i := range again {
		reads[j] = script(i)
	}
	res2, missing2, err := r.Fanout(ctx, op+"_deep", b, again, reads)
	switch {
	case err != nil && b.AllowPartial && ctx.Err() == nil:
		return append(missing, again...), 0, nil // every re-asked shard failed: keep their first answers
	case err != nil:
		return nil, 0, err
	}
	for j, i := range again {
		if res2[j].Err == nil {
			dropped += len(res[i].Seek.Items)
			res[i], limits[i] = res2[j], radius+1
		}
	}
	return append(missing, missing2...), dropped, nil
}

// moreThanFirst counts the members with strictly more points than first
// (the window's first entry) from each shard's entries before the member
// (ups[k], farthest first, at most limits[k]) and its count of members with
// strictly more points than the member (mores[k], stored score ≥
// *a.MoreMin): shard k's count is mores[k] less its entries whose points lie
// between the member's (excluded) and first's (included). They are all in
// ups[k] when the shard returned fewer than limits[k] (nothing more lies
// before the member there) or when its farthest entry already has more
// points than first; otherwise known is false.
func moreThanFirst(enc rank.Encoding, a store.SeekArgs, first rank.Item, ups [][]rank.Item, mores []int64, limits []int) (n int64, known bool) {
	lo, hi := *a.MoreMin, enc.MinScoreAbove(enc.PointsOf(first.Score))
	for k, up := range ups {
		if len(up) == limits[k] && up[0].Score < hi {
			return 0, false
		}
		c := mores[k]
		for _, it := range up {
			if it.Score >= lo && it.Score < hi {
				c--
			}
		}
		n += c
	}
	return n, true
}

// probeOf is the position probe of it: its points group, and on a family
// with sort columns strictly better / at least as good on (points, columns).
func probeOf(enc rank.Encoding, it rank.Item) store.Probe {
	p := enc.PointsOf(it.Score)
	pr := store.Probe{Score: it.Score, Member: it.Member, MoreMin: enc.MinScoreAbove(p), SameMin: enc.MinScoreOf(p)}
	if enc.Cols != nil {
		key := enc.Cols.Key(it.Member)
		pr.MoreMember, pr.SameMember = rank.BetterKey(key), key
	}
	return pr
}

// MoreThan returns seek arguments whose "more" count is the members
// strictly better than it: on points, or on a family with sort columns on
// (points, columns) — the count a competition rank starts from.
func MoreThan(enc rank.Encoding, it rank.Item) store.SeekArgs {
	if enc.Cols != nil {
		score := it.Score
		return store.SeekArgs{MoreMin: &score, MoreMember: rank.BetterKey(enc.Cols.Key(it.Member))}
	}
	more := enc.MinScoreAbove(enc.PointsOf(it.Score))
	return store.SeekArgs{MoreMin: &more}
}

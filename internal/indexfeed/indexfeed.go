// Package indexfeed keeps a gateway's read index current (docs/architecture.md, "The read index"): it
// loads hot boards from Redis into internal/rankindex structures, one per
// board over all its shards, and follows the per-shard change feeds that
// the write scripts append to, so that member reads, Top N, offset pages,
// counts and ranges can be answered from memory with their lag stated.
//
// One goroutine (Run) does all the Redis work, in rounds: each round is one
// pipeline over every shard that is due — go-redis splits it per node, so
// one round trip per node, never a connection or a goroutine per shard. A
// shard is due at once while its feed moves, then after a wait that doubles
// from PollInterval to PollIdle while it is quiet (up to 2 × PollInterval
// while another shard of its board moves): a quiet board of S shards costs
// S ÷ PollIdle commands per second.
//
// Load = note the shard's feed position (its last entry), scan the sorted
// set (ZSCAN, in chunks), then apply the feed from the noted position.
// Follow = read the feed from the last applied entry, inclusive: when that
// entry is gone (the feed was trimmed past it, the shard was flushed, a
// failover lost it) or a reset entry arrives (a rebuild swap, a derive) the
// shard is loaded again; a shard whose feed was empty at its load also
// compares its member count with ZCARD until its first entry. The index is
// a cache of Redis, never a source of truth: a board answers reads only
// while every shard is loaded and has caught up with its feed since.
//
// It imports internal/store (the feed operations), internal/shard (member
// → shard), internal/rankindex and internal/rank; it must not import
// go-redis, net/http, internal/gateway or internal/httpapi.
package indexfeed

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/rankindex"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// Backend runs feed operations on the masters (*store.Store implements it).
type Backend interface {
	Feed(ctx context.Context, ops []store.FeedOp, out []store.FeedReply)
}

var _ Backend = (*store.Store)(nil)

// Spec names one board and its shard keys.
type Spec struct {
	Name   string   // "family/period/dimension": one entry of the index
	Family string   // for metric labels
	Z      []string // each shard's sorted set, by shard index
	Feed   []string // each shard's change feed, by shard index
	// PrefixLen is the width of the sort-column prefix of a stored member
	// (0: the stored member is the user id).
	PrefixLen int
}

// Status says whether a board can answer from the index.
type Status uint8

// Statuses.
const (
	// Ready: loaded, and every shard caught up with its feed since.
	Ready Status = iota
	// Loading: entering the index, or a shard is being loaded again.
	Loading
	// TooBig: the board does not fit index.max_members.
	TooBig
)

// Fallback reasons (rankgate_index_fallbacks_total): why a read that could
// have used the index did not.
const (
	ReasonLoading = "loading"
	ReasonLag     = "lag"
	ReasonTooBig  = "too_big"
)

// Options configure an Index.
type Options struct {
	Backend    Backend
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
	// MaxBoards and MaxMembers bound what is held (index.max_boards,
	// index.max_members); IdleAfter drops a board not read for that long.
	MaxBoards  int
	MaxMembers int64
	IdleAfter  time.Duration
	// PollInterval and PollIdle pace the feed reads (see the package doc).
	PollInterval, PollIdle time.Duration
	// FeedLen is index.feed_len: a feed that was empty at a shard's load and
	// holds fewer entries than this was never trimmed.
	FeedLen int64
	// Timeout bounds each round trip (default 2 s).
	Timeout time.Duration
	// ScanCount (ZSCAN COUNT, default 10 000), ReadCount (XRANGE COUNT,
	// default 1 000) and MaxScans (scan steps per round, default 48).
	ScanCount, ReadCount int64
	MaxScans             int
	// TooBigRetry: how long a board that did not fit waits before it is
	// sized again (default 1 min).
	TooBigRetry time.Duration
	// Families are the families whose reads may use the index: their
	// per-family series (fallbacks by reason, write → visible) start at zero, so that a
	// rate or increase over them works from the gateway's start.
	Families []string
}

// Index holds the boards of one gateway.
type Index struct {
	o   Options
	log *slog.Logger
	now func() time.Time
	m   *metrics

	mu     sync.RWMutex
	boards map[string]*Board
	wake   chan struct{}

	// Loop-owned.
	lastPublish time.Time
	members     int64 // entries of every loaded board
	held        map[*Board]bool
}

// New builds an Index; Run makes it work.
func New(o Options) (*Index, error) {
	if o.Backend == nil {
		return nil, errors.New("indexfeed: nil backend")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBoards <= 0 {
		o.MaxBoards = 64
	}
	if o.MaxMembers <= 0 {
		o.MaxMembers = 5_000_000
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = 10 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 5 * time.Millisecond
	}
	if o.PollIdle < o.PollInterval {
		o.PollIdle = max(o.PollInterval, 200*time.Millisecond)
	}
	if o.FeedLen <= 0 {
		o.FeedLen = 100_000
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.ScanCount <= 0 {
		o.ScanCount = 10_000
	}
	if o.ReadCount <= 0 {
		o.ReadCount = 1000
	}
	if o.MaxScans <= 0 {
		o.MaxScans = 48
	}
	if o.TooBigRetry <= 0 {
		o.TooBigRetry = time.Minute
	}
	x := &Index{o: o, log: o.Logger, now: o.Now, boards: map[string]*Board{}, wake: make(chan struct{}, 1), held: map[*Board]bool{}}
	var err error
	if x.m, err = newMetrics(o.Registerer, x); err != nil {
		return nil, err
	}
	for _, f := range o.Families {
		for _, r := range []string{ReasonLoading, ReasonLag, ReasonTooBig} {
			x.m.fallbacks.WithLabelValues(f, r)
		}
		x.m.visible.WithLabelValues(f)
	}
	return x, nil
}

type boardPhase uint8

const (
	phaseSizing  boardPhase = iota // counting the members (ZCARD of every shard)
	phaseLoading                   // every shard noting its feed and scanning
	phaseLive                      // loaded: shards follow (or one reloads)
	phaseTooBig                    // does not fit; sized again at retryAt
)

type shardPhase uint8

const (
	shardTail   shardPhase = iota // note the feed's last entry, with the first scan step
	shardScan                     // scanning the sorted set
	shardFollow                   // reading the feed
)

// shardState is the loop's view of one shard.
type shardState struct {
	phase  shardPhase
	pos    store.FeedEntry // the last applied feed entry; ID "": the feed was empty at load
	cursor uint64
	buf    []rank.Item // scanned items (a shard reload)
	// caught: when the last read that reached the feed's end was sent;
	// zero: not since the shard was (re)loaded.
	caught   time.Time
	interval time.Duration
	due      time.Time
	members  int64 // the shard's entries in the index
	reload   bool  // a reload of one shard (not the board's first load)
}

// Board is one board of the index. Readers use Status, AsOf and View; every
// other field belongs to the loop.
type Board struct {
	spec Spec

	mu sync.RWMutex
	ix *rankindex.Index

	ready    atomic.Bool
	asOf     atomic.Int64 // unix nanoseconds: every write acknowledged before it is in the index
	lastRead atomic.Int64
	nudge    atomic.Bool
	tooBig   atomic.Bool

	phase     boardPhase
	shards    []shardState
	loadStart time.Time
	retryAt   time.Time // phaseTooBig: when to size it again
	backoff   time.Time // a sizing, tail or scan step failed: not before this
	active    time.Time // when the last read that brought entries to any shard was sent
	loaded    bool      // done a first load (counted in members)
}

// Name is the board's name.
func (b *Board) Name() string { return b.spec.Name }

// AsOf is the instant up to which every write acknowledged by Redis is in
// the index (the oldest of its shards' last complete feed reads).
func (b *Board) AsOf() time.Time { return time.Unix(0, b.asOf.Load()) }

// View runs fn with the board's index under its read lock: fn must not keep
// ix nor call back into the Index.
func (b *Board) View(fn func(ix *rankindex.Index)) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	fn(b.ix)
}

// Nudge asks the loop to read the board's feeds at once (a read found the
// lag high).
func (b *Board) Nudge() { b.nudge.Store(true) }

// Get returns the board called name when it can answer from the index,
// and otherwise why not. A board not yet held enters the index (spec()
// names its keys; it loads in the background); every call counts as a read
// of it (idle_after).
func (x *Index) Get(name string, spec func() Spec) (*Board, Status) {
	now := x.now()
	x.mu.RLock()
	b := x.boards[name]
	x.mu.RUnlock()
	if b == nil {
		x.mu.Lock()
		if b = x.boards[name]; b == nil {
			x.admitLocked(spec(), now)
		}
		x.mu.Unlock()
		x.poke()
		return nil, Loading
	}
	b.lastRead.Store(now.UnixNano())
	switch {
	case b.tooBig.Load():
		return b, TooBig
	case !b.ready.Load():
		return b, Loading
	}
	return b, Ready
}

// Fallback counts a read that did not use the index, by reason.
func (x *Index) Fallback(family, reason string) {
	x.m.fallbacks.WithLabelValues(family, reason).Inc()
}

// Poke wakes the loop (a nudged board).
func (x *Index) Poke() { x.poke() }

func (x *Index) poke() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// admitLocked adds a board, making room by dropping the board read longest
// ago when max_boards are held. x.mu is held.
func (x *Index) admitLocked(spec Spec, now time.Time) *Board {
	if len(x.boards) >= x.o.MaxBoards {
		var oldest *Board
		for _, ob := range x.boards {
			if oldest == nil || ob.lastRead.Load() < oldest.lastRead.Load() {
				oldest = ob
			}
		}
		if oldest != nil {
			x.dropLocked(oldest, "max_boards")
		}
	}
	b := &Board{spec: spec, phase: phaseSizing, loadStart: now}
	b.lastRead.Store(now.UnixNano())
	x.boards[spec.Name] = b
	return b
}

// dropLocked removes a board; the loop notices at its next round.
func (x *Index) dropLocked(b *Board, why string) {
	delete(x.boards, b.spec.Name)
	b.ready.Store(false)
	x.m.dropped.WithLabelValues(why).Inc()
	x.m.boardLag.DeleteLabelValues(b.spec.Name)
	x.m.boardMembers.DeleteLabelValues(b.spec.Name)
	x.log.Info("index: board left", "board", b.spec.Name, "reason", why)
}

// opRef says which board and shard an operation of a round serves.
type opRef struct {
	b     *Board
	shard int
}

// Run follows the feeds until ctx ends.
func (x *Index) Run(ctx context.Context) {
	var ops []store.FeedOp
	var refs []opRef
	var out []store.FeedReply
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		now := x.now()
		boards := x.list(now)
		ops, refs = ops[:0], refs[:0]
		next := now.Add(x.o.PollIdle)
		for _, b := range boards {
			ops, refs, next = x.plan(b, now, ops, refs, next)
		}
		if len(ops) == 0 {
			x.publish(now, boards)
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(max(next.Sub(now), time.Millisecond))
			select {
			case <-ctx.Done():
				return
			case <-x.wake:
			case <-timer.C:
			}
			continue
		}
		if cap(out) < len(ops) {
			out = make([]store.FeedReply, len(ops))
		}
		out = out[:len(ops)]
		sent := x.now()
		rctx, cancel := context.WithTimeout(ctx, x.o.Timeout)
		x.o.Backend.Feed(rctx, ops, out)
		cancel()
		x.m.rounds.Inc()
		x.m.roundOps.Add(float64(len(ops)))
		x.apply(sent, ops, refs, out)
		clear(out)
		x.publish(x.now(), boards)
		// Pace the rounds: a feed that moved is read again after
		// PollInterval, not in a busy loop (loads go on at once).
		if wait := x.earliest(boards).Sub(x.now()); wait > 0 {
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-x.wake:
			case <-timer.C:
			}
		}
	}
}

// list returns the boards held now, after dropping those idle too long,
// and takes the members of every board that left off the total.
func (x *Index) list(now time.Time) []*Board {
	x.mu.Lock()
	out := make([]*Board, 0, len(x.boards))
	for _, b := range x.boards {
		if now.Sub(time.Unix(0, b.lastRead.Load())) > x.o.IdleAfter {
			x.dropLocked(b, "idle")
			continue
		}
		out = append(out, b)
	}
	x.mu.Unlock()
	now2 := make(map[*Board]bool, len(out))
	for _, b := range out {
		now2[b] = true
	}
	for b := range x.held {
		if !now2[b] {
			x.forget(b)
		}
	}
	x.held = now2
	// A stable order: the same boards share rounds the same way.
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

// forget takes a dropped board's members off the total.
func (x *Index) forget(b *Board) {
	if b.loaded {
		for i := range b.shards {
			x.members -= b.shards[i].members
		}
		b.loaded = false
	}
}

// earliest is the soonest instant some shard is due.
func (x *Index) earliest(boards []*Board) time.Time {
	t := x.now().Add(x.o.PollIdle)
	for _, b := range boards {
		if b.backoff.After(x.now()) {
			t = minTime(t, b.backoff)
			if b.phase != phaseLive {
				continue
			}
		}
		switch b.phase {
		case phaseSizing, phaseLoading:
			return time.Time{}
		case phaseTooBig:
			if b.retryAt.Before(t) {
				t = b.retryAt
			}
			continue
		}
		if b.nudge.Load() {
			return time.Time{}
		}
		for i := range b.shards {
			sh := &b.shards[i]
			if sh.phase != shardFollow {
				if b.backoff.After(x.now()) {
					continue
				}
				return time.Time{}
			}
			if sh.due.Before(t) {
				t = sh.due
			}
		}
	}
	return t
}

// plan adds the operations board b needs this round.
func (x *Index) plan(b *Board, now time.Time, ops []store.FeedOp, refs []opRef, next time.Time) ([]store.FeedOp, []opRef, time.Time) {
	n := len(b.spec.Z)
	switch b.phase {
	case phaseTooBig:
		if now.Before(b.retryAt) {
			return ops, refs, minTime(next, b.retryAt)
		}
		b.phase = phaseSizing
		fallthrough
	case phaseSizing:
		if now.Before(b.backoff) {
			return ops, refs, minTime(next, b.backoff)
		}
		for i := 0; i < n; i++ {
			ops = append(ops, store.FeedOp{Kind: store.FeedCard, Key: b.spec.Z[i]})
			refs = append(refs, opRef{b, i})
		}
		return ops, refs, next
	}
	nudged := b.nudge.Swap(false)
	scans := 0
	loadOK := !now.Before(b.backoff)
	for i := range b.shards {
		sh := &b.shards[i]
		switch sh.phase {
		case shardTail:
			if !loadOK || scans >= x.o.MaxScans {
				continue
			}
			scans++
			ops = append(ops, store.FeedOp{Kind: store.FeedTail, Key: b.spec.Feed[i]},
				store.FeedOp{Kind: store.FeedScan, Key: b.spec.Z[i], Count: x.o.ScanCount})
			refs = append(refs, opRef{b, i}, opRef{b, i})
		case shardScan:
			if !loadOK || scans >= x.o.MaxScans {
				continue
			}
			scans++
			ops = append(ops, store.FeedOp{Kind: store.FeedScan, Key: b.spec.Z[i], Cursor: sh.cursor, Count: x.o.ScanCount})
			refs = append(refs, opRef{b, i})
		case shardFollow:
			if b.phase != phaseLive {
				continue // the board's other shards are still scanning
			}
			if !nudged && now.Before(sh.due) {
				next = minTime(next, sh.due)
				continue
			}
			ops = append(ops, store.FeedOp{Kind: store.FeedRead, Key: b.spec.Feed[i], From: sh.pos.ID, Count: x.o.ReadCount})
			refs = append(refs, opRef{b, i})
			if sh.pos.ID == "" {
				ops = append(ops, store.FeedOp{Kind: store.FeedCard, Key: b.spec.Z[i]})
				refs = append(refs, opRef{b, i})
			}
		}
	}
	return ops, refs, next
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// apply takes a round's replies. sent is when the round was sent: a feed
// read that reached the end shows every write acknowledged before sent.
func (x *Index) apply(sent time.Time, ops []store.FeedOp, refs []opRef, out []store.FeedReply) {
	for start := 0; start < len(ops); {
		// The operations of one board are consecutive.
		b := refs[start].b
		end := start + 1
		for end < len(ops) && refs[end].b == b {
			end++
		}
		switch b.phase {
		case phaseSizing:
			x.applySizing(b, sent, out[start:end])
		default:
			x.applyBoard(b, sent, ops[start:end], refs[start:end], out[start:end])
		}
		start = end
	}
}

// applySizing decides whether a board fits, from its shards' ZCARDs.
func (x *Index) applySizing(b *Board, sent time.Time, out []store.FeedReply) {
	var total int64
	for i := range out {
		if out[i].Err != nil {
			x.m.errors.Inc()
			b.backoff = sent.Add(x.o.PollIdle)
			x.log.Warn("index: sizing a board failed; retrying", "board", b.spec.Name, "err", out[i].Err)
			return // stays in phaseSizing: asked again after the backoff
		}
		total += out[i].N
	}
	if total > x.o.MaxMembers-x.members {
		b.phase, b.retryAt = phaseTooBig, sent.Add(x.o.TooBigRetry)
		b.tooBig.Store(true)
		x.log.Warn("index: board does not fit index.max_members; its reads stay on the fan-out",
			"board", b.spec.Name, "members", total, "held", x.members, "max_members", x.o.MaxMembers)
		return
	}
	b.tooBig.Store(false)
	b.phase, b.loadStart = phaseLoading, sent
	b.shards = make([]shardState, len(b.spec.Z))
	x.m.loads.WithLabelValues("board").Inc()
}

// applyBoard takes one board's replies of a round.
func (x *Index) applyBoard(b *Board, sent time.Time, ops []store.FeedOp, refs []opRef, out []store.FeedReply) {
	type follow struct {
		shard   int
		entries []store.FeedEntry
		card    int64
		hasCard bool
	}
	var follows []follow
	for k := 0; k < len(ops); k++ {
		i := refs[k].shard
		sh := &b.shards[i]
		r := &out[k]
		switch ops[k].Kind {
		case store.FeedTail:
			if r.Err != nil || out[k+1].Err != nil {
				x.m.errors.Inc()
				b.backoff = sent.Add(x.o.PollIdle)
				k++ // its scan step: the shard notes its feed again after the backoff
				continue
			}
			sh.pos = store.FeedEntry{}
			if len(r.Entries) > 0 {
				sh.pos = r.Entries[0]
			}
			sh.phase = shardScan
			sh.cursor, sh.buf = 0, sh.buf[:0]
		case store.FeedScan:
			if r.Err != nil {
				x.m.errors.Inc()
				b.backoff = sent.Add(x.o.PollIdle)
				continue
			}
			sh.buf = append(sh.buf, r.Items...)
			sh.cursor = r.Cursor
			if sh.cursor == 0 {
				sh.phase = shardFollow
				sh.caught, sh.due, sh.interval = time.Time{}, time.Time{}, x.o.PollInterval
				if sh.reload {
					x.reloadDone(b, i)
				}
			}
		case store.FeedRead:
			f := follow{shard: i, entries: r.Entries}
			if k+1 < len(ops) && ops[k+1].Kind == store.FeedCard && refs[k+1].shard == i {
				k++
				if out[k].Err == nil {
					f.card, f.hasCard = out[k].N, true
				} else if r.Err == nil {
					r.Err = out[k].Err
				}
			}
			if r.Err != nil {
				x.m.errors.Inc()
				sh.interval = min(sh.interval*2, x.o.PollIdle)
				sh.due = sent.Add(sh.interval)
				continue
			}
			follows = append(follows, f)
		}
	}
	if b.phase == phaseLoading && x.scanned(b) {
		x.firstLoad(b)
	}
	if len(follows) > 0 {
		now := x.now()
		b.mu.Lock()
		for _, f := range follows {
			x.follow(b, f.shard, f.entries, f.card, f.hasCard, sent, now)
		}
		b.mu.Unlock()
	}
	if b.loaded && x.members > x.o.MaxMembers {
		// The board grew past what the index holds: it leaves for the
		// fan-out, and is sized again later.
		x.tooBig(b, sent)
		return
	}
	x.refresh(b)
}

// tooBig turns a loaded board out of the index: a new entry of its name
// answers too_big until it fits again (sized after TooBigRetry); a read
// that holds the old board finishes on it, and its memory goes with it.
func (x *Index) tooBig(b *Board, now time.Time) {
	x.forget(b)
	nb := &Board{spec: b.spec, phase: phaseTooBig, retryAt: now.Add(x.o.TooBigRetry)}
	nb.tooBig.Store(true)
	nb.lastRead.Store(b.lastRead.Load())
	x.mu.Lock()
	if x.boards[b.spec.Name] == b {
		x.boards[b.spec.Name] = nb
	}
	x.mu.Unlock()
	b.ready.Store(false)
	x.log.Warn("index: board grew past index.max_members; its reads go to the fan-out", "board", b.spec.Name,
		"max_members", x.o.MaxMembers)
}

// scanned reports whether every shard of a loading board has scanned.
func (x *Index) scanned(b *Board) bool {
	for i := range b.shards {
		if b.shards[i].phase != shardFollow {
			return false
		}
	}
	return true
}

// firstLoad builds the board's index from every shard's scan.
func (x *Index) firstLoad(b *Board) {
	var total int
	for i := range b.shards {
		total += len(b.shards[i].buf)
	}
	items := make([]rank.Item, 0, total)
	for i := range b.shards {
		items = append(items, b.shards[i].buf...)
		b.shards[i].buf = nil
	}
	ix := rankindex.New(b.spec.PrefixLen)
	ix.Load(items)
	n := len(b.shards)
	counts := make([]int64, n)
	ix.Each(func(it rank.Item) bool {
		counts[shard.Of(idOf(it.Member, b.spec.PrefixLen), n)]++
		return true
	})
	b.mu.Lock()
	b.ix = ix
	b.mu.Unlock()
	for i := range b.shards {
		b.shards[i].members = counts[i]
		x.members += counts[i]
	}
	b.loaded = true
	b.phase = phaseLive
	x.m.loadSeconds.Observe(x.now().Sub(b.loadStart).Seconds())
	x.log.Info("index: board loaded", "board", b.spec.Name, "members", ix.Len(), "shards", n,
		"took", x.now().Sub(b.loadStart).Round(time.Millisecond))
}

// idOf is the user id of a stored member (rankindex's id rule).
func idOf(member string, prefixLen int) string {
	if prefixLen > 0 && len(member) > prefixLen {
		return member[prefixLen:]
	}
	return member
}

// reloadShard starts loading shard i again (the feed showed a gap).
func (x *Index) reloadShard(b *Board, i int, reason string) {
	sh := &b.shards[i]
	sh.phase, sh.reload = shardTail, true
	sh.caught, sh.buf = time.Time{}, nil
	b.ready.Store(false)
	x.m.reloads.WithLabelValues(reason).Inc()
	x.m.loads.WithLabelValues("shard").Inc()
	x.log.Info("index: reloading a shard", "board", b.spec.Name, "shard", i, "reason", reason)
}

// reloadDone swaps a reloaded shard's scan into the board's index.
func (x *Index) reloadDone(b *Board, i int) {
	sh := &b.shards[i]
	n := len(b.shards)
	b.mu.Lock()
	before := b.ix.Len()
	b.ix.RemoveIf(func(id string) bool { return shard.Of(id, n) == i })
	for _, it := range sh.buf {
		b.ix.Upsert(it.Member, it.Score)
	}
	after := b.ix.Len()
	b.mu.Unlock()
	// Entries of the other shards did not change: the difference is this
	// shard's.
	removed := sh.members
	sh.members = int64(after - before + int(removed))
	x.members += sh.members - removed
	sh.buf, sh.reload = nil, false
}

// follow applies one shard's feed entries; b.mu is held.
func (x *Index) follow(b *Board, i int, entries []store.FeedEntry, card int64, hasCard bool, sent, now time.Time) {
	sh := &b.shards[i]
	if sh.phase != shardFollow {
		return
	}
	wasEmpty := sh.pos.ID == ""
	fresh := entries
	if sh.pos.ID != "" {
		if len(entries) == 0 || !sameEntry(entries[0], sh.pos) {
			x.reloadShard(b, i, "gap")
			return
		}
		fresh = entries[1:]
	} else if len(entries) > 0 && (int64(len(entries)) >= x.o.ReadCount || int64(len(entries)) >= x.o.FeedLen) {
		// The feed was empty at the load and has grown past one read: it
		// may have been trimmed.
		x.reloadShard(b, i, "gap")
		return
	}
	live := !sh.caught.IsZero()
	for _, e := range fresh {
		if e.Reset != "" {
			x.reloadShard(b, i, "reset")
			return
		}
		before := b.ix.Len()
		if e.Removed {
			b.ix.Remove(e.Member)
		} else {
			b.ix.Upsert(e.Member, e.Score)
		}
		d := int64(b.ix.Len() - before)
		sh.members += d
		x.members += d
		if live {
			x.m.visible.WithLabelValues(b.spec.Family).Observe(max(0, float64(now.UnixMilli()-e.Ms)/1000))
		}
	}
	x.m.entries.Add(float64(len(fresh)))
	if len(entries) > 0 {
		sh.pos = entries[len(entries)-1]
	}
	if wasEmpty && hasCard && card != sh.members {
		// A shard whose feed is still empty changed without it (flushed,
		// expired, or written before its family kept a feed).
		x.reloadShard(b, i, "card")
		return
	}
	if int64(len(entries)) < x.o.ReadCount {
		sh.caught = sent
	}
	if len(fresh) > 0 {
		b.active = sent
	}
	if int64(len(entries)) >= x.o.ReadCount {
		sh.due = time.Time{} // more to read now
		return
	}
	sh.interval = x.o.pace(sh.interval, len(fresh) > 0, sent.Sub(b.active) < x.o.PollIdle)
	sh.due = sent.Add(sh.interval)
}

// pace is the wait before a shard's next feed read, after a read that
// reached the feed's end: PollInterval when the read brought entries; else
// the last wait doubled, up to PollIdle — but only up to twice PollInterval
// while another shard of the board brought entries within PollIdle
// (boardActive). Writes spread over every shard of a board, so a quiet
// shard of a busy board is about to move too: without the cap its wait
// would double past the gaps between its own writes, and the p99 of write
// → visible would follow the longest waits, not the write rate.
func (o Options) pace(last time.Duration, fresh, boardActive bool) time.Duration {
	if fresh {
		return o.PollInterval
	}
	limit := o.PollIdle
	if boardActive {
		limit = min(limit, 2*o.PollInterval)
	}
	return min(max(last*2, o.PollInterval), limit)
}

// sameEntry: a feed entry read again is the one applied (its id, and its
// content: an id that a failover handed out again names another write).
func sameEntry(a, b store.FeedEntry) bool {
	return a.ID == b.ID && a.Member == b.Member && a.Score == b.Score && a.Removed == b.Removed && a.Reset == b.Reset
}

// refresh recomputes whether the board can answer, and as of when.
func (x *Index) refresh(b *Board) {
	if b.phase != phaseLive {
		b.ready.Store(false)
		return
	}
	var oldest time.Time
	for i := range b.shards {
		sh := &b.shards[i]
		if sh.phase != shardFollow || sh.caught.IsZero() {
			b.ready.Store(false)
			return
		}
		if oldest.IsZero() || sh.caught.Before(oldest) {
			oldest = sh.caught
		}
	}
	b.asOf.Store(oldest.UnixNano())
	if !b.ready.Load() {
		b.ready.Store(true)
		x.log.Debug("index: board ready", "board", b.spec.Name)
	}
}

// publish updates the gauges, at most once a second.
func (x *Index) publish(now time.Time, boards []*Board) {
	if now.Sub(x.lastPublish) < time.Second {
		return
	}
	x.lastPublish = now
	var bytes int64
	var ready, loading, tooBig int
	for _, b := range boards {
		switch {
		case b.ready.Load():
			ready++
		case b.tooBig.Load():
			tooBig++
		default:
			loading++
		}
		if !b.loaded {
			continue
		}
		b.mu.RLock()
		bytes += b.ix.Bytes()
		n := b.ix.Len()
		b.mu.RUnlock()
		x.m.boardMembers.WithLabelValues(b.spec.Name).Set(float64(n))
		if b.ready.Load() {
			x.m.boardLag.WithLabelValues(b.spec.Name).Set(now.Sub(b.AsOf()).Seconds())
		}
	}
	x.m.bytes.Set(float64(bytes))
	x.m.boards.WithLabelValues("ready").Set(float64(ready))
	x.m.boards.WithLabelValues("loading").Set(float64(loading))
	x.m.boards.WithLabelValues("too_big").Set(float64(tooBig))
}

// Members is the number of entries of every loaded board (for metrics and
// tests).
func (x *Index) Members() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	var n int64
	for _, b := range x.boards {
		if b.ready.Load() {
			b.mu.RLock()
			n += int64(b.ix.Len())
			b.mu.RUnlock()
		}
	}
	return n
}

// Boards counts the boards held, and those ready.
func (x *Index) Boards() (held, ready int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, b := range x.boards {
		held++
		if b.ready.Load() {
			ready++
		}
	}
	return held, ready
}

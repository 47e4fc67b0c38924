package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/indexfeed"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// indexedFamily: a sum family of 4 national shards with a read index.
const indexedFamily = `  ix:
    period: all
    tie: first
    rank: competition
    max_points: 100000
    seq_capacity: 1000000
` + indexYAML + `    dimensions:
      national: {shards: 4}
      province: {shards: 2}
`

// indexedService builds a Service with a registry and starts its index.
func indexedService(t *testing.T, families string, adjust func(*Options, *store.Store)) (*Service, *prometheus.Registry, *store.Store) {
	t.Helper()
	reg := prometheus.NewRegistry()
	var st *store.Store
	svc := newClusterServiceWith(t, families, func(o *Options, s *store.Store) {
		o.Registerer, st = reg, s
		if adjust != nil {
			adjust(o, s)
		}
	})
	startIndex(t, svc)
	return svc, reg, st
}

// allEntries reads a whole (small) board at one consistency.
func allEntries(t *testing.T, svc *Service, ref BoardRef, level Consistency) Page {
	t.Helper()
	p, err := svc.Top(context.Background(), ref, 1000, ReadOptions{Consistency: level})
	if err != nil {
		t.Fatalf("top at %s: %v", level, err)
	}
	return p
}

// indexEqualsRedis waits until the board answers from the index, caught up
// with every write acknowledged so far, entry by entry what the masters
// answer.
func indexEqualsRedis(t *testing.T, svc *Service, ref BoardRef) {
	t.Helper()
	since := time.Now()
	waitIndex(t, svc, ref, since)
	want := allEntries(t, svc, ref, ConsistencyPrimary)
	got := allEntries(t, svc, ref, ConsistencyIndex)
	if got.Source != SourceIndex {
		t.Fatalf("%s: source %s after waiting for the index", ref.Dimension, got.Source)
	}
	if !slices.EqualFunc(got.Entries, want.Entries, func(a, b rank.Entry) bool {
		return a.User == b.User && a.Points == b.Points && a.Position == b.Position && a.Rank == b.Rank
	}) {
		t.Fatalf("%s: the index holds\n%v\nRedis holds\n%v", ref.Dimension, got.Entries, want.Entries)
	}
}

// events applies n events of users u%02d (mod users), from id base.
func events(t *testing.T, svc *Service, family, base string, n, users int) {
	t.Helper()
	if err := eventsErr(svc, family, base, n, users); err != nil {
		t.Fatal(err)
	}
}

// eventsErr is events for a goroutine other than the test's.
func eventsErr(svc *Service, family, base string, n, users int) error {
	batch := make([]Event, n)
	for i := range batch {
		u := fmt.Sprintf("u%02d", (i*7)%users)
		batch[i] = Event{EventID: fmt.Sprintf("%s-%d", base, i), Family: family, User: u, Delta: ptr(int64(1 + i%4)),
			Dims: map[string]string{"province": []string{"zj", "gd"}[i%2]}}
	}
	items, err := svc.ApplyBatch(context.Background(), batch)
	if err != nil {
		return err
	}
	for i, it := range items {
		if it.Err != nil {
			return fmt.Errorf("event %s-%d: %w", base, i, it.Err)
		}
	}
	return nil
}

// TestIndexReloadsOnGaps: whatever makes a shard's feed and the index
// disagree — a feed trimmed past the last applied entry, a shard whose keys
// are gone (a flush), a rebuild swap of other content, removals and bans —
// the index notices, reloads that shard and equals Redis again, entry by
// entry; it never keeps answering from what Redis no longer holds.
func TestIndexReloadsOnGaps(t *testing.T) {
	t.Parallel()
	svc, reg, st := indexedService(t, indexedFamily, nil)
	ctx := context.Background()
	rc := testcluster.Client(t)
	ref := BoardRef{Family: "ix", Period: "all", Dimension: "national"}
	layout := svc.layout
	b := svc.families["ix"].board("all", shard.National, "")
	reloads := func(reason string) float64 {
		return metricValue(t, reg, "rankgate_index_reloads_total", map[string]string{"reason": reason})
	}

	events(t, svc, "ix", "a", 40, 30)
	indexEqualsRedis(t, svc, ref) // loaded
	events(t, svc, "ix", "b", 200, 40)
	indexEqualsRedis(t, svc, ref) // followed

	// A feed trimmed past the index's position: every entry of shard 0's
	// feed goes, then more writes come.
	gaps := reloads("gap")
	k0 := layout.Keys(b, 0, 4)
	if err := rc.XTrimMaxLen(ctx, k0.Feed, 0).Err(); err != nil {
		t.Fatal(err)
	}
	events(t, svc, "ix", "c", 120, 50)
	indexEqualsRedis(t, svc, ref)
	if reloads("gap") <= gaps {
		t.Fatalf("a trimmed feed did not reload its shard (gap reloads %v)", reloads("gap"))
	}

	// A shard flushed: its keys (sorted set, dedupe, state, feed) are gone.
	gaps = reloads("gap")
	k1 := layout.Keys(b, 1, 4)
	if err := rc.Del(ctx, k1.Z, k1.Ev, k1.Meta, k1.Feed, k1.Md).Err(); err != nil {
		t.Fatal(err)
	}
	// The next write to any shard is not needed: the follower sees the gap.
	indexEqualsRedis(t, svc, ref)
	if reloads("gap") <= gaps {
		t.Fatalf("a flushed shard was not reloaded (gap reloads %v)", reloads("gap"))
	}
	if n := allEntries(t, svc, ref, ConsistencyIndex); len(n.Entries) == 0 {
		t.Fatal("the index lost every shard, not one")
	}

	// A rebuild swap of other content on shard 2 (store level: Redis-only
	// mode has no ledger to rebuild from): its reset entry reloads it.
	resets := reloads("reset")
	k2 := layout.Keys(b, 2, 4)
	var entries []store.RebuildEntry
	for i := 0; i < 20; i++ {
		u := fmt.Sprintf("r%02d", i)
		for k := 0; shard.Of(u, 4) != 2; k++ {
			u = fmt.Sprintf("r%02d-%d", i, k)
		}
		sc, err := svc.families["ix"].enc.Score(int64(1000+i), int64(i))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, store.RebuildEntry{Member: u, Score: sc, Version: 1})
	}
	if _, err := st.Rebuild(ctx, k2, entries, svc.families["ix"].feedLen); err != nil {
		t.Fatal(err)
	}
	indexEqualsRedis(t, svc, ref)
	if reloads("reset") <= resets {
		t.Fatalf("a rebuild swap did not reload its shard (reset reloads %v)", reloads("reset"))
	}

	// Removals and bans reach the index through the feed.
	top := allEntries(t, svc, ref, ConsistencyPrimary).Entries
	if _, err := svc.RemoveMember(ctx, ref, top[0].User, Removal{Operator: "op", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PutBan(ctx, top[1].User, BanRequest{Operator: "op", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	indexEqualsRedis(t, svc, ref)
	for _, e := range allEntries(t, svc, ref, ConsistencyIndex).Entries {
		if e.User == top[0].User || e.User == top[1].User {
			t.Fatalf("%s was removed, the index still holds it", e.User)
		}
	}
}

// TestIndexDerivedBoards: a derived family with a read index: each derive
// replaces its shards whole (a reset entry), and the index follows.
func TestIndexDerivedBoards(t *testing.T) {
	t.Parallel()
	fams := fmt.Sprintf(derivedFamilies, "desc")
	fams = fams[:len(fams)-len("    dimensions:\n      national: {shards: 4}\n      province: {shards: 2}\n")] + indexYAML +
		"    dimensions:\n      national: {shards: 4}\n      province: {shards: 2}\n"
	svc, _, _ := indexedService(t, fams, nil)
	ctx := context.Background()
	ref := BoardRef{Family: "final", Period: "all", Dimension: "national"}
	for round := 0; round < 2; round++ {
		events(t, svc, "base", fmt.Sprintf("b%d", round), 60, 25)
		events(t, svc, "bonus", fmt.Sprintf("o%d", round), 30, 25)
		if _, err := svc.Derive(ctx, "final", "all"); err != nil {
			t.Fatal(err)
		}
		indexEqualsRedis(t, svc, ref)
		if n := len(allEntries(t, svc, ref, ConsistencyIndex).Entries); n != 25 {
			t.Fatalf("round %d: %d entries on the derived board, want 25", round, n)
		}
	}
}

// TestIndexBounds: a board over index.max_members stays on fan-out reads
// (and the metrics say why); past index.max_boards the board read longest
// ago leaves.
func TestIndexBounds(t *testing.T) {
	t.Parallel()
	t.Run("too big", func(t *testing.T) {
		t.Parallel()
		svc, reg, _ := indexedService(t, indexedFamily, func(o *Options, _ *store.Store) { o.Config.Index.MaxMembers = 10 })
		ctx := context.Background()
		events(t, svc, "ix", "a", 80, 40) // 40 members on national, 20 on each province
		// A board too big when it is first read never answers from the index.
		zj := BoardRef{Family: "ix", Period: "all", Dimension: "province:zj"}
		for k := 0; k < 20; k++ {
			p, err := svc.Top(ctx, zj, 100, ReadOptions{Consistency: ConsistencyIndex})
			if err != nil {
				t.Fatal(err)
			}
			if p.Source == SourceIndex || len(p.Entries) != 20 {
				t.Fatalf("read %d of a board over max_members: %d entries from %s, want 20 from the fan-out", k, len(p.Entries), p.Source)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The national board was loaded at start (empty) and grew past the
		// bound through its feed: it leaves the index.
		ref := BoardRef{Family: "ix", Period: "all", Dimension: "national"}
		soon.Eventually(t, 10*time.Second, func() error {
			p, err := svc.Top(ctx, ref, 100, ReadOptions{Consistency: ConsistencyIndex})
			if err != nil {
				return err
			}
			if p.Source == SourceIndex {
				return fmt.Errorf("the national board still answers from the index (%d entries)", len(p.Entries))
			}
			if len(p.Entries) != 40 {
				t.Fatalf("fallback read: %d entries, want 40", len(p.Entries))
			}
			return nil
		})
		if v := metricValue(t, reg, "rankgate_index_fallbacks_total", map[string]string{"reason": indexfeed.ReasonTooBig}); v < 20 {
			t.Fatalf("too_big fallbacks = %v, want ≥ 20", v)
		}
	})
	t.Run("max boards", func(t *testing.T) {
		t.Parallel()
		svc, reg, _ := indexedService(t, indexedFamily, func(o *Options, _ *store.Store) { o.Config.Index.MaxBoards = 1 })
		events(t, svc, "ix", "a", 40, 20)
		zj := BoardRef{Family: "ix", Period: "all", Dimension: "province:zj"}
		gd := BoardRef{Family: "ix", Period: "all", Dimension: "province:gd"}
		indexEqualsRedis(t, svc, zj)
		indexEqualsRedis(t, svc, gd) // zj leaves
		if v := metricValue(t, reg, "rankgate_index_dropped_total", map[string]string{"reason": "max_boards"}); v < 1 {
			t.Fatalf("dropped{max_boards} = %v, want ≥ 1", v)
		}
		if held, _ := svc.Index().Boards(); held != 1 {
			t.Fatalf("%d boards held, want 1 (max_boards)", held)
		}
	})
}

// TestIndexSeveralGateways: three gateways on one Redis, writes through all
// of them: every gateway's index equals Redis once caught up (each sees
// the others' writes through the feeds).
func TestIndexSeveralGateways(t *testing.T) {
	t.Parallel()
	prefix := testcluster.Prefix(t)
	var svcs []*Service
	for range 3 {
		svc, _, _ := indexedService(t, indexedFamily, func(o *Options, _ *store.Store) { o.Config.Redis.Prefix = prefix })
		svcs = append(svcs, svc)
	}
	ref := BoardRef{Family: "ix", Period: "all", Dimension: "national"}
	for _, svc := range svcs { // every board enters every index first
		indexEqualsRedis(t, svc, ref)
	}
	var wg sync.WaitGroup
	for g, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				if err := eventsErr(svc, "ix", fmt.Sprintf("g%d-%d", g, k), 60, 70); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, svc := range svcs {
		indexEqualsRedis(t, svc, ref)
		indexEqualsRedis(t, svc, BoardRef{Family: "ix", Period: "all", Dimension: "province:gd"})
	}
}

// TestIndexPeriodRollOver: a new period is a board with keys of its own.
// Events of the period that ended (within its grace) and of the new one
// land on two boards that the index holds side by side, each equal to
// Redis entry by entry; neither leaks into the other.
func TestIndexPeriodRollOver(t *testing.T) {
	t.Parallel()
	const fam = `  daily:
    period: day
    timezone: UTC
    grace: 48h
    tie: member
    max_points: 100000
` + indexYAML + `    dimensions:
      national: {shards: 4}
`
	svc, _, _ := indexedService(t, fam, nil)
	ctx := context.Background()
	now := time.Now().UTC()
	before := now.Add(-24 * time.Hour)
	refOf := func(at time.Time) BoardRef {
		p, err := svc.Period(ctx, "daily", at)
		if err != nil {
			t.Fatal(err)
		}
		return BoardRef{Family: "daily", Period: p.Period, Dimension: shard.National}
	}
	old, cur := refOf(before), refOf(now)
	if old.Period == cur.Period {
		t.Fatalf("periods of %s and %s are both %s", before, now, cur.Period)
	}
	write := func(base string, at time.Time, n, users int) {
		batch := make([]Event, n)
		for i := range batch {
			batch[i] = Event{EventID: fmt.Sprintf("%s-%d", base, i), Family: "daily", User: fmt.Sprintf("%s%02d", base, i%users),
				Delta: ptr(int64(1 + i%5)), At: &at}
		}
		items, err := svc.ApplyBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range items {
			if it.Err != nil {
				t.Fatalf("event %s-%d: %v", base, i, it.Err)
			}
		}
	}
	// The old period's board enters the index first, then the period
	// rolls over: writes go on to both (the old one within its grace).
	write("a", before, 40, 10)
	indexEqualsRedis(t, svc, old)
	write("b", now, 30, 7)
	write("c", before, 20, 10)
	indexEqualsRedis(t, svc, cur)
	indexEqualsRedis(t, svc, old)
	o, c := allEntries(t, svc, old, ConsistencyIndex), allEntries(t, svc, cur, ConsistencyIndex)
	if len(o.Entries) != 20 || len(c.Entries) != 7 {
		t.Fatalf("the old period holds %d members, the new one %d; want 20 and 7", len(o.Entries), len(c.Entries))
	}
	for _, e := range c.Entries {
		if e.User[0] != 'b' {
			t.Fatalf("member %s of the old period is on the new period's board", e.User)
		}
	}
	for _, e := range o.Entries {
		if e.User[0] == 'b' {
			t.Fatalf("member %s of the new period is on the old period's board", e.User)
		}
	}
}

package indexfeed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/rankindex"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
)

// fakeShard is one shard of fakeRedis: a sorted set and its change feed.
type fakeShard struct {
	z    map[string]int64
	feed []store.FeedEntry
}

// fakeRedis answers feed operations from memory, the way Redis does: a
// write changes the sorted set and appends to the feed at once; ids grow.
// Tests change it behind the follower's back (trim, flush, lose writes)
// and make operations fail on cue.
type fakeRedis struct {
	mu     sync.Mutex
	shards map[string]*fakeShard // by sorted-set key
	ms     int64                 // the last entry id's time
	fail   error                 // every operation fails while set
	ops    int
}

func newFakeRedis() *fakeRedis { return &fakeRedis{shards: map[string]*fakeShard{}, ms: 1_000} }

func (f *fakeRedis) shard(z string) *fakeShard {
	s := f.shards[z]
	if s == nil {
		s = &fakeShard{z: map[string]int64{}}
		f.shards[z] = s
	}
	return s
}

// write sets member's score (removed: takes it out), feeding it when feed.
func (f *fakeRedis) write(z, member string, score int64, removed, feed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(z)
	if removed {
		delete(s.z, member)
	} else {
		s.z[member] = score
	}
	if feed {
		f.ms++
		s.feed = append(s.feed, store.FeedEntry{ID: fmt.Sprintf("%d-0", f.ms), Ms: time.Now().UnixMilli(), Member: member, Score: score, Removed: removed})
	}
}

// reset replaces a shard's set whole and appends a reset entry.
func (f *fakeRedis) reset(z string, items map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(z)
	s.z = maps.Clone(items)
	f.ms++
	s.feed = append(s.feed, store.FeedEntry{ID: fmt.Sprintf("%d-0", f.ms), Reset: "swap"})
}

func (f *fakeRedis) do(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func idMs(id string) int64 {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return n
}

func (f *fakeRedis) Feed(ctx context.Context, ops []store.FeedOp, out []store.FeedReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops += len(ops)
	for i, op := range ops {
		if f.fail != nil {
			out[i] = store.FeedReply{Err: f.fail}
			continue
		}
		var r store.FeedReply
		switch op.Kind {
		case store.FeedTail:
			if s := f.byFeed(op.Key); s != nil && len(s.feed) > 0 {
				r.Entries = []store.FeedEntry{s.feed[len(s.feed)-1]}
			}
		case store.FeedRead:
			if s := f.byFeed(op.Key); s != nil {
				for _, e := range s.feed {
					if (op.From == "" || idMs(e.ID) >= idMs(op.From)) && int64(len(r.Entries)) < op.Count {
						r.Entries = append(r.Entries, e)
					}
				}
			}
		case store.FeedScan:
			// Two steps: half the members, then the rest (a cursor of 1).
			s := f.shard(op.Key)
			keys := slices.Sorted(maps.Keys(s.z))
			half := len(keys) / 2
			part := keys[:half]
			r.Cursor = 1
			if op.Cursor == 1 {
				part, r.Cursor = keys[half:], 0
			}
			for _, m := range part {
				r.Items = append(r.Items, rank.Item{Score: s.z[m], Member: m})
			}
		case store.FeedCard:
			r.N = int64(len(f.shard(op.Key).z))
		}
		out[i] = r
	}
}

func (f *fakeRedis) byFeed(feed string) *fakeShard {
	return f.shards[strings.TrimSuffix(feed, "feed")+"z"]
}

// want is the union of the shards' sorted sets in board order.
func (f *fakeRedis) want(sp Spec) []rank.Item {
	f.mu.Lock()
	defer f.mu.Unlock()
	var items []rank.Item
	for _, z := range sp.Z {
		for m, sc := range f.shard(z).z {
			items = append(items, rank.Item{Score: sc, Member: m})
		}
	}
	slices.SortFunc(items, func(a, b rank.Item) int {
		if rank.Before(a, b) {
			return -1
		}
		return 1
	})
	return items
}

func testSpec(n int) Spec {
	l := shard.Layout{Prefix: "t"}
	b := shard.Board{Family: "f", Period: "all", DimType: shard.National}
	sp := Spec{Name: b.String(), Family: "f"}
	for i := range n {
		z := l.ZKey(b, i, n)
		sp.Z, sp.Feed = append(sp.Z, z), append(sp.Feed, shard.FeedKey(z))
	}
	return sp
}

// put writes member on its home shard of sp.
func (f *fakeRedis) put(sp Spec, member string, score int64, removed bool) {
	f.write(sp.Z[shard.Of(member, len(sp.Z))], member, score, removed, true)
}

func newTestIndex(t *testing.T, f *fakeRedis, o Options) (*Index, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Backend, o.Registerer = f, reg
	if o.PollInterval == 0 {
		o.PollInterval, o.PollIdle = time.Millisecond, 5*time.Millisecond
	}
	x, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return x, reg
}

// equalSoon waits until the board is ready, caught up with everything
// written before the call, and equal to the fake's sorted sets.
func equalSoon(t *testing.T, x *Index, f *fakeRedis, sp Spec) {
	t.Helper()
	since := time.Now()
	soon.Eventually(t, 10*time.Second, func() error {
		b, st := x.Get(sp.Name, func() Spec { return sp })
		if st != Ready {
			return fmt.Errorf("status %d", st)
		}
		if b.AsOf().Before(since) {
			return fmt.Errorf("as of %s, before %s", b.AsOf(), since)
		}
		var got []rank.Item
		b.View(func(ix *rankindex.Index) {
			ix.Each(func(it rank.Item) bool { got = append(got, it); return true })
		})
		if want := f.want(sp); !slices.Equal(got, want) {
			return fmt.Errorf("index %v\nwant  %v", got, want)
		}
		return nil
	})
}

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func reloads(t *testing.T, x *Index, reason string) float64 {
	return value(t, x.m.reloads.WithLabelValues(reason))
}

func TestLoadThenFollow(t *testing.T) {
	t.Parallel()
	f := newFakeRedis()
	sp := testSpec(4)
	for i := range 40 {
		f.put(sp, fmt.Sprintf("u%02d", i), int64(i%7), false)
	}
	x, _ := newTestIndex(t, f, Options{})
	if _, st := x.Get(sp.Name, func() Spec { return sp }); st != Loading {
		t.Fatalf("first read: status %d, want loading", st)
	}
	equalSoon(t, x, f, sp)
	for i := range 60 {
		f.put(sp, fmt.Sprintf("u%02d", i%50), int64(100+i), i%9 == 0)
	}
	equalSoon(t, x, f, sp)
	if held, ready := x.Boards(); held != 1 || ready != 1 {
		t.Fatalf("boards held %d ready %d, want 1 1", held, ready)
	}
}

// TestReloads: every way the feed and the sets can disagree reloads the
// shard, and the index equals the sets again.
func TestReloads(t *testing.T) {
	t.Parallel()
	cases := []struct {
		title  string
		reason string
		break_ func(f *fakeRedis, sp Spec)
	}{
		{"a feed trimmed past the last applied entry", "gap", func(f *fakeRedis, sp Spec) {
			f.do(func() { s := f.shard(sp.Z[1]); s.feed = s.feed[len(s.feed):] })
			f.put(sp, "late", 5, false)
		}},
		{"a failover that lost the last writes of a shard", "gap", func(f *fakeRedis, sp Spec) {
			z := sp.Z[2]
			f.do(func() {
				s := f.shard(z)
				// The lost writes: their entries and their effect on the set.
				for _, e := range s.feed[len(s.feed)-3:] {
					delete(s.z, e.Member)
				}
				s.feed = s.feed[:len(s.feed)-3]
			})
			// No new write needed: the follower reads from an entry that is gone.
		}},
		{"a flushed shard", "gap", func(f *fakeRedis, sp Spec) {
			f.do(func() { delete(f.shards, sp.Z[3]) })
		}},
		{"a rebuild swap", "reset", func(f *fakeRedis, sp Spec) {
			items := map[string]int64{}
			for i := range 5 {
				m := fmt.Sprintf("r%d", i)
				for k := 0; shard.Of(m, 4) != 0; k++ {
					m = fmt.Sprintf("r%d-%d", i, k)
				}
				items[m] = int64(1000 + i)
			}
			f.reset(sp.Z[0], items)
		}},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			f := newFakeRedis()
			sp := testSpec(4)
			for i := range 80 {
				f.put(sp, fmt.Sprintf("u%02d", i%40), int64(i), false)
			}
			x, _ := newTestIndex(t, f, Options{})
			equalSoon(t, x, f, sp)
			before := reloads(t, x, c.reason)
			c.break_(f, sp)
			equalSoon(t, x, f, sp)
			if after := reloads(t, x, c.reason); after <= before {
				t.Fatalf("reloads{%s} %v → %v: no reload", c.reason, before, after)
			}
		})
	}
}

// TestEmptyFeedCard: a shard whose feed was empty at its load (written
// before its family kept a feed) is compared with ZCARD until its first
// entry: a flush of it is noticed.
func TestEmptyFeedCard(t *testing.T) {
	t.Parallel()
	f := newFakeRedis()
	sp := testSpec(2)
	for i := range 30 {
		m := fmt.Sprintf("u%02d", i)
		f.write(sp.Z[shard.Of(m, 2)], m, int64(i), false, false) // no feed
	}
	x, _ := newTestIndex(t, f, Options{})
	equalSoon(t, x, f, sp)
	f.do(func() { delete(f.shards, sp.Z[0]) })
	equalSoon(t, x, f, sp)
	if reloads(t, x, "card") == 0 {
		t.Fatal("a flush of a shard with an empty feed was not noticed")
	}
	// Its first feed entry is applied as usual.
	f.put(sp, "new", 77, false)
	equalSoon(t, x, f, sp)
}

// TestFailingRedis: while every operation fails, the board's as_of stays
// where it was (the gateway falls back by lag); after, it catches up.
func TestFailingRedis(t *testing.T) {
	t.Parallel()
	f := newFakeRedis()
	sp := testSpec(4)
	f.put(sp, "a", 1, false)
	x, _ := newTestIndex(t, f, Options{})
	equalSoon(t, x, f, sp)
	f.do(func() { f.fail = errors.New("connection refused") })
	b, _ := x.Get(sp.Name, func() Spec { return sp })
	stuck := b.AsOf()
	f.put(sp, "b", 2, false)
	soon.Eventually(t, 5*time.Second, func() error { // some rounds fail
		if v := value(t, x.m.errors); v < 8 {
			return fmt.Errorf("%v errors", v)
		}
		return nil
	})
	if b.AsOf() != stuck {
		t.Fatalf("as_of moved from %s to %s while every read failed", stuck, b.AsOf())
	}
	f.do(func() { f.fail = nil })
	equalSoon(t, x, f, sp)
}

// TestBounds: a board over max_members never loads; past max_boards the
// board read longest ago leaves; a board not read for idle_after leaves.
func TestBounds(t *testing.T) {
	t.Parallel()
	t.Run("max members", func(t *testing.T) {
		t.Parallel()
		f := newFakeRedis()
		sp := testSpec(2)
		for i := range 20 {
			f.put(sp, fmt.Sprintf("u%02d", i), 1, false)
		}
		x, _ := newTestIndex(t, f, Options{MaxMembers: 10})
		soon.Eventually(t, 5*time.Second, func() error {
			if _, st := x.Get(sp.Name, func() Spec { return sp }); st != TooBig {
				return fmt.Errorf("status %d, want too big", st)
			}
			return nil
		})
	})
	t.Run("max boards and idle", func(t *testing.T) {
		t.Parallel()
		f := newFakeRedis()
		a, b := testSpec(2), testSpec(2)
		b.Name = "other"
		x, _ := newTestIndex(t, f, Options{MaxBoards: 1, IdleAfter: 300 * time.Millisecond})
		equalSoon(t, x, f, a)
		equalSoon(t, x, f, b) // a leaves
		if held, _ := x.Boards(); held != 1 {
			t.Fatalf("%d boards held, want 1", held)
		}
		soon.Eventually(t, 5*time.Second, func() error { // b is not read again: it leaves too
			if held, _ := x.Boards(); held != 0 {
				return fmt.Errorf("%d boards held", held)
			}
			return nil
		})
	})
}

// TestPace: the wait before a shard's next feed read.
func TestPace(t *testing.T) {
	t.Parallel()
	o := Options{PollInterval: 5 * time.Millisecond, PollIdle: 200 * time.Millisecond}
	ms := time.Millisecond
	tests := []struct {
		name        string
		last        time.Duration
		fresh       bool
		boardActive bool
		want        time.Duration
	}{
		{"entries: poll again soon", 160 * ms, true, false, 5 * ms},
		{"entries on a busy board", 10 * ms, true, true, 5 * ms},
		{"quiet shard of a quiet board doubles", 20 * ms, false, false, 40 * ms},
		{"quiet board stops at poll_idle", 160 * ms, false, false, 200 * ms},
		{"quiet board stays at poll_idle", 200 * ms, false, false, 200 * ms},
		{"first quiet read", 0, false, false, 5 * ms},
		{"quiet shard of a busy board doubles once", 5 * ms, false, true, 10 * ms},
		{"quiet shard of a busy board is capped", 10 * ms, false, true, 10 * ms},
		{"a long wait shrinks when the board wakes", 200 * ms, false, true, 10 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := o.pace(tt.last, tt.fresh, tt.boardActive); got != tt.want {
				t.Errorf("pace(%s, fresh %v, board active %v) = %s, want %s", tt.last, tt.fresh, tt.boardActive, got, tt.want)
			}
		})
	}
}

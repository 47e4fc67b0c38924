package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
)

// blockReads wraps the real store; while armed, every fan-out phase
// (one call per node) announces itself on entered and then waits for release (or its context).
type blockReads struct {
	Backend
	armed   atomic.Bool
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func newBlockReads(be Backend) *blockReads {
	return &blockReads{Backend: be, entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (b *blockReads) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	b.calls.Add(1)
	if b.armed.Load() {
		b.entered <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	b.Backend.ReadShards(ctx, reads, replica, out)
}

// topWithin runs a cached Top-100 and fails if it does not answer within
// 5 s while the armed fan-out stays blocked.
func topWithin(t *testing.T, svc *Service, ref BoardRef, what string) *Page {
	t.Helper()
	type res struct {
		p   *Page
		err error
	}
	ch := make(chan res, 1)
	go func() {
		p, err := svc.Top(context.Background(), ref, 100, ReadOptions{})
		ch <- res{&p, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.p
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no answer in 5 s — it waits for the blocked fan-out", what)
		return nil
	}
}

// TestCachedReadAtExpiryDoesNotWait: on the real cluster, with
// CacheServeStale, a cached Top-100 of a 16-shard board read just after its
// cache_ttl is answered at once from the previous copy (source cache, its
// older as_of, max-age 0) while the one refresh's fan-out is blocked; other
// reads meanwhile start no second fan-out; once the fan-out is released the
// answer is fresh again. Both for the local cache and for a gateway whose
// local cache is cold, reading a stale shared copy (cache_shared): it takes
// the lease, serves the copy and recomputes in the background.
func TestCachedReadAtExpiryDoesNotWait(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"local", "shared"} {
		t.Run(fam, func(t *testing.T) {
			t.Parallel()
			clk := &clock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
			// Gateway 0 loads the first copy; gateway 1 (its fan-outs
			// blockable) reads at expiry. For "local", one gateway plays both.
			var blk [2]*blockReads
			prefix := ""
			svcs := make([]*Service, 2)
			for g := range svcs {
				if fam == "local" && g == 1 {
					svcs[1], blk[1] = svcs[0], blk[0]
					break
				}
				svcs[g] = newClusterServiceWith(t, sharedFamilies, func(o *Options, st *store.Store) {
					if g == 0 {
						prefix = o.Config.Redis.Prefix
					}
					o.Config.Redis.Prefix = prefix
					blk[g] = newBlockReads(st)
					o.Backend, o.Now, o.Registerer, o.CacheServeStale = blk[g], clk.Now, prometheus.NewRegistry(), true
				})
			}
			ctx := context.Background()
			var evs []Event
			for i := range 400 {
				evs = append(evs, Event{EventID: fmt.Sprintf("r%d", i), Family: fam, User: fmt.Sprintf("u%04d", i), Delta: ptr(int64(1 + i%97))})
			}
			items, err := svcs[0].ApplyBatch(ctx, evs)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Err != nil {
					t.Fatal(it.Err)
				}
			}
			ref := BoardRef{Family: fam, Period: "all", Dimension: "national"}
			want, err := svcs[0].Top(ctx, ref, 100, primaryRead)
			if err != nil {
				t.Fatal(err)
			}
			t0 := clk.Now()
			c0 := blk[0].calls.Load()
			first := topWithin(t, svcs[0], ref, "first read")
			perFanout := blk[0].calls.Load() - c0 // one per node and phase
			if first.Source != SourcePrimary || !first.AsOf.Equal(t0) || len(first.Entries) != 100 {
				t.Fatalf("first read: source %q as of %v, %d entries; want primary as of %v, 100", first.Source, first.AsOf, len(first.Entries), t0)
			}

			clk.Add(time.Second + 10*time.Millisecond) // just past cache_ttl
			blk[1].armed.Store(true)
			before := blk[1].calls.Load()
			p := topWithin(t, svcs[1], ref, "read just after expiry")
			select {
			case <-blk[1].entered:
			case <-time.After(5 * time.Second):
				t.Fatal("no refresh fan-out started")
			}
			if p.Source != SourceCache || !p.AsOf.Equal(t0) || p.MaxAge != 0 {
				t.Fatalf("read just after expiry: source %q as of %v max-age %v; want cache as of %v (the previous copy), max-age 0", p.Source, p.AsOf, p.MaxAge, t0)
			}
			for i, e := range p.Entries {
				if e.User != want.Entries[i].User || e.Points != want.Entries[i].Points || e.Rank != want.Entries[i].Rank {
					t.Fatalf("stale entry %d = %+v, want %+v", i, e, want.Entries[i])
				}
			}
			for i := range 8 {
				q := topWithin(t, svcs[1], ref, fmt.Sprintf("read %d during the refresh", i))
				if q.Source != SourceCache || !q.AsOf.Equal(t0) {
					t.Fatalf("read %d during the refresh: source %q as of %v, want cache as of %v", i, q.Source, q.AsOf, t0)
				}
			}
			if n := blk[1].calls.Load() - before; n < 1 || n > perFanout {
				t.Fatalf("%d node reads started during the refresh, want one fan-out's (≤ %d)", n, perFanout)
			}

			blk[1].armed.Store(false)
			close(blk[1].release)
			soon.Eventually(t, 10*time.Second, func() error {
				q, err := svcs[1].Top(ctx, ref, 100, ReadOptions{})
				if err != nil {
					return err
				}
				if !q.AsOf.After(t0) {
					return fmt.Errorf("still as of %v", q.AsOf)
				}
				if !q.AsOf.Equal(clk.Now()) || q.MaxAge != time.Second {
					return soon.Stop(fmt.Errorf("after the refresh: as of %v max-age %v, want %v, 1s", q.AsOf, q.MaxAge, clk.Now()))
				}
				return nil
			})
		})
	}
}

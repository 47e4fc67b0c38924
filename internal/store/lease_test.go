package store_test

import (
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/shard"
)

// One holder at a time; each acquisition takes a larger fencing token; a
// holder whose claim expired or was released cannot renew it.
func TestLeaseFencing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 10*time.Second)
	keys := e.layout.Lease("scheduler")
	if shard.Slot(keys.Owner) != shard.Slot(keys.Fence) {
		t.Fatalf("lease keys %q and %q are in different slots", keys.Owner, keys.Fence)
	}
	a := e.s.NewLease(keys, "gw-a", time.Minute)
	b := e.s.NewLease(keys, "gw-b", time.Minute)
	ta, err := a.Hold(ctx)
	if err != nil || ta < 1 {
		t.Fatalf("a.Hold = %d, %v; want a token", ta, err)
	}
	if tb, err := b.Hold(ctx); err != nil || tb != 0 {
		t.Fatalf("b.Hold while a holds = %d, %v; want 0", tb, err)
	}
	if again, err := a.Hold(ctx); err != nil || again != ta {
		t.Fatalf("a renews: %d, %v; want its token %d", again, err, ta)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	tb, err := b.Hold(ctx)
	if err != nil || tb <= ta {
		t.Fatalf("b.Hold after a released = %d, %v; want a token above %d", tb, err, ta)
	}
	// b's claim expires (played by deleting it); a takes over with a newer
	// token, and b, renewing, learns it lost the lease.
	if err := e.c.Del(ctx, keys.Owner).Err(); err != nil {
		t.Fatal(err)
	}
	ta2, err := a.Hold(ctx)
	if err != nil || ta2 <= tb {
		t.Fatalf("a.Hold after b expired = %d, %v; want a token above %d", ta2, err, tb)
	}
	if got, err := b.Hold(ctx); err != nil || got != 0 {
		t.Fatalf("b.Hold after losing the lease = %d, %v; want 0", got, err)
	}
	// A short claim lapses by itself.
	short := e.s.NewLease(e.layout.Lease("short"), "gw-s", 50*time.Millisecond)
	if tok, err := short.Hold(ctx); err != nil || tok < 1 {
		t.Fatalf("short.Hold = %d, %v", tok, err)
	}
	if ttl := e.c.PTTL(ctx, e.layout.Lease("short").Owner).Val(); ttl <= 0 || ttl > 50*time.Millisecond {
		t.Fatalf("claim TTL = %v, want within (0, 50ms]", ttl)
	}
}

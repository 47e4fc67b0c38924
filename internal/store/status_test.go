package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// TestOOMIsASentinel: a real Redis at maxmemory under noeviction refuses the
// write scripts and INCRBY, and the store answers store.ErrOOM for both, so
// the gateway never matches Redis error text.
func TestOOMIsASentinel(t *testing.T) {
	t.Parallel()
	addr := startRedis(t, "--maxmemory-policy", "noeviction")
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	s, err := store.New(c, nil, store.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	layout := shard.Layout{Prefix: "oom"}
	b := shard.Board{Family: "f", Period: "all", DimType: shard.National}
	w := store.Write{Kind: store.KindApply, Keys: layout.Keys(b, 0, 1), EventID: "e1", Member: "u1", Mode: "sum",
		Value: 10, MaxPoints: 1 << 40, NowMs: 1, Rules: "r1"}
	if r := s.Write(ctx, []store.Write{w})[0]; r.Err != nil || r.Status != store.StatusOK || errors.Is(r.Err, store.ErrOOM) {
		t.Fatalf("write with memory to spare = %+v", r)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	w.EventID = "e2"
	if r := s.Write(ctx, []store.Write{w})[0]; !errors.Is(r.Err, store.ErrOOM) {
		t.Errorf("apply script at maxmemory: %+v, want store.ErrOOM", r)
	}
	if _, err := s.TakeSeq(ctx, layout.Period("f", "all"), 1); !errors.Is(err, store.ErrOOM) {
		t.Errorf("TakeSeq at maxmemory: %v, want store.ErrOOM", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if r := s.Write(ctx, []store.Write{w})[0]; r.Err != nil || r.Status != store.StatusOK {
		t.Errorf("write after lifting maxmemory = %+v", r)
	}
}

package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

func waitStore(t *testing.T, c redis.UniversalClient, n int, timeout time.Duration) *store.Store {
	t.Helper()
	s, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second, WaitReplicas: n, WaitTimeout: timeout})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	return s
}

func applyWrites(b shard.Board, l shard.Layout, id string, n int) []store.Write {
	ws := make([]store.Write, n)
	for i := range ws {
		ws[i] = store.Write{Kind: store.KindApply, Keys: l.Keys(b, i, n), Member: fmt.Sprintf("m%d", i),
			EventID: id, Mode: "sum", Value: 5, MaxPoints: 1 << 40, NowMs: 1, Rules: "r1"}
	}
	return ws
}

// TestWaitReplicas: with WaitReplicas, a write is acknowledged only when WAIT
// on its master's connection saw that many replicas; the test cluster has one
// replica per master, so 1 succeeds (and the replica then holds the event)
// and 2 fails with ErrNotReplicated after the WAIT timeout, leaving a write
// that a retry answers as a replay.
func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 30*time.Second)
	b := shard.Board{Family: "learning", Period: "2026-W40", DimType: shard.National}
	const n = 12 // shards over every master of the 3-master test cluster

	one := waitStore(t, e.c, 1, time.Second)
	for i, r := range one.Write(ctx, applyWrites(b, e.layout, "ev-one", n)) {
		if r.Err != nil || r.Status != "ok" {
			t.Fatalf("wait 1, shard %d: status %q err %v; want ok", i, r.Status, r.Err)
		}
	}
	// Acknowledged with WAIT 1: the replica has the event now, not eventually.
	for i := 0; i < n; i++ {
		k := e.layout.Keys(b, i, n)
		rep, err := e.cc.SlaveForKey(ctx, k.Ev)
		if err != nil {
			t.Fatalf("replica of shard %d: %v", i, err)
		}
		pipe := rep.Pipeline()
		pipe.ReadOnly(ctx)
		has := pipe.HExists(ctx, k.Ev, "ev-one")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("replica %s of shard %d: %v", rep.Options().Addr, i, err)
		}
		if !has.Val() {
			t.Errorf("shard %d: replica %s lacks an event acknowledged with wait_replicas 1", i, rep.Options().Addr)
		}
	}

	two := waitStore(t, e.c, 2, 50*time.Millisecond)
	start := time.Now()
	for i, r := range two.Write(ctx, applyWrites(b, e.layout, "ev-two", n)) {
		if !errors.Is(r.Err, store.ErrNotReplicated) {
			t.Fatalf("wait 2 with one replica per master, shard %d: status %q err %v; want ErrNotReplicated", i, r.Status, r.Err)
		}
		if !strings.Contains(r.Err.Error(), "1 of 2 replicas") {
			t.Errorf("shard %d: error %q does not say how many replicas answered", i, r.Err)
		}
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("wait 2 failed after %s, before its 50ms WAIT timeout", el)
	}
	// The refused acknowledgement left the write on the master: the retry
	// with the same id is a replay, acknowledged once replicated.
	for i, r := range one.Write(ctx, applyWrites(b, e.layout, "ev-two", n)) {
		if r.Err != nil || r.Status != "dup" {
			t.Fatalf("retry, shard %d: status %q err %v; want dup", i, r.Status, r.Err)
		}
		if *r.After != 10 {
			t.Errorf("retry, shard %d: total %d, want 10 (two events of 5, the second counted once)", i, *r.After)
		}
	}
}

// TestWaitReplicasNeedsTheHook: a client not built by store.NewClient has no
// WAIT hook; the store must refuse to acknowledge rather than skip the WAIT.
func TestWaitReplicasNeedsTheHook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testcluster.Addrs(t)})
	t.Cleanup(func() { _ = plain.Close() })
	s := waitStore(t, plain, 1, time.Second)
	b := shard.Board{Family: "learning", Period: "2026-W41", DimType: shard.National}
	for i, r := range s.Write(ctx, applyWrites(b, e.layout, "ev-plain", 3)) {
		if !errors.Is(r.Err, store.ErrNotReplicated) || !strings.Contains(r.Err.Error(), "lacks the WAIT hook") {
			t.Fatalf("shard %d: err %v; want ErrNotReplicated naming the missing hook", i, r.Err)
		}
	}
}

// TestWaitReplicasStandalone: one standalone node has no replica, so
// wait_replicas 1 can never be met there.
func TestWaitReplicasStandalone(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	c, err := store.NewClient(store.ClientOptions{Addrs: []string{addr}, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t, 20*time.Second)
	l := shard.Layout{Prefix: "wt"}
	b := shard.Board{Family: "learning", Period: "2026-W42", DimType: shard.National}
	r := waitStore(t, c, 1, 20*time.Millisecond).Write(ctx, applyWrites(b, l, "ev-solo", 1))[0]
	if !errors.Is(r.Err, store.ErrNotReplicated) || !strings.Contains(r.Err.Error(), "0 of 1 replicas") {
		t.Fatalf("err %v; want ErrNotReplicated with 0 of 1 replicas", r.Err)
	}
	if r := waitStore(t, c, 0, 0).Write(ctx, applyWrites(b, l, "ev-solo", 1))[0]; r.Err != nil || r.Status != "dup" {
		t.Fatalf("without WAIT: status %q err %v; want dup (the first write ran)", r.Status, r.Err)
	}
}

// TestReplaysAreWritten: a replay — an apply of an event id already applied,
// a projection of a version already stored — writes its record back
// unchanged, so that the WAIT after it (on its connection) covers the
// original write, which may have run on another connection that never
// waited (a retry after "not replicated yet", a ledger event retried through
// another gateway). Counted on a private node by Redis's own dirty counter:
// a script that writes nothing would leave it unchanged.
func TestReplaysAreWritten(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	c, err := store.NewClient(store.ClientOptions{Addrs: []string{addr}, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t, 20*time.Second)
	s := waitStore(t, c, 0, 0)
	l := shard.Layout{Prefix: "rw"}
	b := shard.Board{Family: "learning", Period: "2026-W43", DimType: shard.National}
	changes := func() int64 {
		t.Helper()
		info, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "rdb_changes_since_last_save:"); ok {
				var n int64
				if _, err := fmt.Sscan(v, &n); err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatal("INFO persistence has no rdb_changes_since_last_save")
		return 0
	}
	proj := store.Write{Kind: store.KindProject, Keys: l.Keys(b, 0, 1), Member: "m1", Version: 3, Value: 40,
		MaxPoints: 1 << 40, NowMs: 1, Rules: "r1", SetSeq: true}
	for _, tc := range []struct {
		name   string
		w      store.Write
		status store.WriteStatus
	}{
		{"apply replay", applyWrites(b, l, "ev-r", 1)[0], "dup"},
		{"projection of the stored version", proj, "stale"},
	} {
		if r := s.Write(ctx, []store.Write{tc.w})[0]; r.Err != nil || r.Status != "ok" {
			t.Fatalf("%s: first write: status %q err %v", tc.name, r.Status, r.Err)
		}
		before := changes()
		if r := s.Write(ctx, []store.Write{tc.w})[0]; r.Err != nil || r.Status != tc.status {
			t.Fatalf("%s: replay: status %q err %v; want %s", tc.name, r.Status, r.Err, tc.status)
		}
		if after := changes(); after <= before {
			t.Errorf("%s: the replay wrote nothing (changes %d → %d): a WAIT after it would not cover the original", tc.name, before, after)
		}
	}
}

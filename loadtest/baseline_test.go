package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// baselineConfig is a gateway config on the test cluster with one sum family
// of 4 national shards and 2 province shards.
func baselineConfig(t *testing.T) string {
	t.Helper()
	addrs := testcluster.Addrs(t)
	quoted := make([]string, len(addrs))
	for i, a := range addrs {
		quoted[i] = strconv.Quote(a)
	}
	cfg := fmt.Sprintf(`listen: "127.0.0.1:0"
redis:
  addrs: [%s]
  prefix: %s
families:
  learning:
    source: events
    aggregate: sum
    period: all
    tie: member
    rank: competition
    max_points: 8388607
    cache_ttl: 1s
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
  race:
    aggregate: max
    period: all
    tie: first
    cache_ttl: 1s
    columns:
      - {name: time_ms, order: asc, max: 86400000}
      - {name: kills, order: desc, max: 999}
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
`, strings.Join(quoted, ", "), testcluster.Prefix(t))
	path := filepath.Join(t.TempDir(), "rankgate.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runBaseline runs the load tool on cfg's cluster without a gateway: a direct
// prefill of 300 members of family, then a 2 s closed-loop baseline phase of
// every operation; it answers the baseline's result file.
func runBaseline(t *testing.T, cfg, family string) Result {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := run(ctx, []string{"-config", cfg, "-family", family, "-period", "all", "-members", "300",
		"-provinces", "3", "-classes", "0", "-prefill", "300", "-prefill-direct", "-prefill-batch", "100",
		"-baseline", "-mode", "closed", "-workers", "2", "-duration", "2s", "-pause", "0",
		"-mix", "event=20,batch=2,top=40,member=14,around=8,page=8,lookup=8",
		"-out", out, "-no-plots", "-quiet"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "baseline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRunBaselineOnCluster runs the load tool end to end without a gateway:
// a direct prefill of 300 members into the real cluster, then a closed-loop
// baseline phase of reads and writes through NewBaseline's store and the
// gateway's read plan. Every request must succeed and the national board
// must hold exactly the prefilled members.
func TestRunBaselineOnCluster(t *testing.T) {
	t.Parallel()
	cfg := baselineConfig(t)
	r := runBaseline(t, cfg, "learning")
	if r.Prefill == nil || r.Prefill.Events != 300 || r.Prefill.Failed != 0 {
		t.Errorf("prefill = %+v, want 300 events, none failed", r.Prefill)
	}
	if r.NationalMembers != 300 {
		t.Errorf("national board holds %d members, want the 300 prefilled (load events reuse those members)", r.NationalMembers)
	}
	if r.Total.Count == 0 || r.Total.Errors != 0 {
		t.Errorf("baseline phase: %d requests, %d errors (codes %v), want some and none failed", r.Total.Count, r.Total.Errors, r.Total.Codes)
	}
	ops := map[string]bool{}
	for _, o := range r.Ops {
		if o.Count > 0 {
			ops[o.Op] = true
		}
	}
	for _, want := range []string{"event", "top", "member"} {
		if !ops[want] {
			t.Errorf("no %s requests ran: ops %v", want, ops)
		}
	}
}

// TestRunBaselineColumnsOnCluster: the load tool drives a family with sort
// columns (every event carries them, the direct prefill and the baseline
// write columns.lua): every request succeeds and the board holds the
// prefilled members with their columns.
func TestRunBaselineColumnsOnCluster(t *testing.T) {
	t.Parallel()
	cfg := baselineConfig(t)
	r := runBaseline(t, cfg, "race")
	if r.Prefill == nil || r.Prefill.Events != 300 || r.Prefill.Failed != 0 || r.NationalMembers != 300 {
		t.Errorf("prefill = %+v, national members %d, want 300 events, none failed, 300 members", r.Prefill, r.NationalMembers)
	}
	if r.Total.Count == 0 || r.Total.Errors != 0 {
		t.Errorf("baseline phase: %d requests, %d errors (codes %v), want some and none failed", r.Total.Count, r.Total.Errors, r.Total.Codes)
	}
	// The members carry their columns: every stored member splits, and the
	// cols hashes name all 300.
	gcfg, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cols := gcfg.Families["race"].Encoding().Cols
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testcluster.Addrs(t)})
	defer c.Close()
	layout := shard.Layout{Prefix: gcfg.Redis.Prefix}
	var n int64
	for i := 0; i < 4; i++ {
		k := layout.Keys(shard.Board{Family: "race", Period: "all", DimType: shard.National}, i, 4)
		ms, err := c.ZRange(ctx, k.Z, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if !cols.Valid(m) {
				t.Fatalf("shard %d holds %q, not a stored member with columns", i, m)
			}
		}
		h, err := c.HLen(ctx, k.Cols).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += h
	}
	if n != 300 {
		t.Errorf("cols hashes hold %d users, want 300", n)
	}
}

package store_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/store"
)

// BenchmarkReadShardsPlace: the client side of a 16-shard rank's probe
// round on the real cluster — one ReadShards call per master (as
// readplan.Fanout groups them, run one after another here), each shard a
// native position probe (ZCARD, ZCOUNT, the points group). Allocations per
// read are the pin (times swing with the machine's load).
func BenchmarkReadShardsPlace(b *testing.B) {
	e := newEnv(b)
	keys := batchBoard(b, e, 400)
	ctx := ctxT(b, time.Minute)
	byNode := map[string][]store.ShardRead{}
	probe := []store.Probe{{Score: 40, Member: "u123", MoreMin: 41, SameMin: 40}}
	for _, k := range keys {
		n := e.s.NodeOf(ctx, k)
		byNode[n] = append(byNode[n], store.ShardRead{Kind: store.ReadPlace, Key: k, Probes: probe})
	}
	out := make([]store.ShardReply, len(keys))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, reads := range byNode {
			e.s.ReadShards(ctx, reads, false, out)
			for i := range reads {
				if out[i].Err != nil || out[i].Open {
					b.Fatalf("%+v", out[i])
				}
			}
		}
	}
}

// failFirstPipeline makes the first pipeline through a node client answer
// every command with a MOVED error, as a master does for a slot that moved
// away; later pipelines reach Redis.
type failFirstPipeline struct{ failed atomic.Bool }

func (h *failFirstPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failFirstPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *failFirstPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.failed.CompareAndSwap(false, true) {
			for _, c := range cmds {
				c.SetErr(errors.New("MOVED 1 127.0.0.1:1"))
			}
			return cmds[0].Err()
		}
		return next(ctx, cmds)
	}
}

// TestReadShardsDirectToMaster (read transport go-redis; rueidis:
// TestReadShardsRueidisMatchesClusterPipeline): the reads of one master's
// shards go to that master's own go-redis client and answer exactly what the same reads answer
// mixed with other masters' (the cluster pipeline); when the direct
// pipeline fails — here a MOVED on every command — the read is sent again
// through the cluster client (which follows redirects) and still answers,
// counted in rankgate_redis_read_rerouted_total. A read of replicas never
// goes direct.
func TestReadShardsDirectToMaster(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	s, err := store.New(e.c, nil, store.Options{Timeout: 5 * time.Second, Registerer: reg, ReadTransport: store.TransportGoRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys := batchBoard(t, e, 200)
	ctx := ctxT(t, 20*time.Second)
	more := int64(30)
	byNode := map[string][]store.ShardRead{}
	var all []store.ShardRead
	for _, k := range keys {
		rs := []store.ShardRead{
			{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekTop, Limit: 5}},
			{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekAfter, Score: 40, Member: "u100", Limit: 4, MoreMin: &more}},
			{Kind: store.ReadPlace, Key: k, Probes: []store.Probe{{Score: 40, Member: "u050", MoreMin: 41, SameMin: 40}}},
			{Kind: store.ReadWindow, Key: k, Probes: []store.Probe{{Score: 40, Member: "u050", MoreMin: 41, SameMin: 40}}, Seek: store.SeekArgs{Limit: 3}},
			{Kind: store.ReadScores, Key: k, Members: []string{"u001", "absent"}},
			{Kind: store.ReadCount, Key: k, Lo: 20, Hi: 50},
		}
		n := e.s.NodeOf(ctx, k)
		byNode[n] = append(byNode[n], rs...)
		all = append(all, rs...)
	}
	if len(byNode) < 2 {
		t.Fatalf("16 shards on %d masters: want several", len(byNode))
	}
	want := make([]store.ShardReply, len(all))
	s.ReadShards(ctx, all, false, want) // several masters: the cluster pipeline
	wantOf := map[string][]store.ShardReply{}
	for i, r := range all {
		wantOf[r.Key] = append(wantOf[r.Key], want[i])
	}
	check := func(what string, reads []store.ShardRead, got []store.ShardReply) {
		t.Helper()
		seen := map[string]int{}
		for i, r := range reads {
			w := wantOf[r.Key][seen[r.Key]]
			seen[r.Key]++
			if got[i].Err != nil || !reflect.DeepEqual(got[i], w) {
				t.Fatalf("%s: read %d (%+v) = %+v (%v), want %+v", what, i, r, got[i], got[i].Err, w)
			}
		}
	}
	for n, reads := range byNode {
		got := make([]store.ShardReply, len(reads))
		s.ReadShards(ctx, reads, false, got)
		check("direct to "+n, reads, got)
	}
	rerouted := "rankgate_redis_read_rerouted_total"
	if v := counterValue(t, reg, rerouted); v != 0 {
		t.Fatalf("%s = %v before any failure", rerouted, v)
	}
	for n, reads := range byNode {
		master, err := e.cc.MasterForKey(ctx, reads[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		master.AddHook(&failFirstPipeline{})
		got := make([]store.ShardReply, len(reads))
		s.ReadShards(ctx, reads, false, got)
		check("direct to "+n+" after a MOVED", reads, got)
		break
	}
	if v := counterValue(t, reg, rerouted); v != 1 {
		t.Fatalf("%s = %v after one failed direct read, want 1", rerouted, v)
	}
}

// BenchmarkReadShardsParallel: 16-shard probe rounds (as
// BenchmarkReadShardsPlace) and around-me windows from 8 goroutines at
// once, through each read transport in turn on the same cluster — the
// per-round-trip cost under concurrency, where rueidis pipelines the
// goroutines' reads onto one connection per master.
func BenchmarkReadShardsParallel(b *testing.B) {
	e := newEnv(b)
	keys := batchBoard(b, e, 400)
	ctx := ctxT(b, 10*time.Minute)
	probe := []store.Probe{{Score: 40, Member: "u123", MoreMin: 41, SameMin: 40}}
	kinds := map[string]func(k string) store.ShardRead{
		"place": func(k string) store.ShardRead {
			return store.ShardRead{Kind: store.ReadPlace, Key: k, Probes: probe}
		},
		"window": func(k string) store.ShardRead {
			return store.ShardRead{Kind: store.ReadWindow, Key: k, Probes: probe, Seek: store.SeekArgs{Limit: 6}}
		},
		"top": func(k string) store.ShardRead {
			return store.ShardRead{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekTop, Limit: 7}}
		},
	}
	for _, kind := range []string{"place", "window", "top"} {
		var groups [][]store.ShardRead
		byNode := map[string]int{}
		for _, k := range keys {
			n := e.s.NodeOf(ctx, k)
			i, ok := byNode[n]
			if !ok {
				i = len(groups)
				byNode[n] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], kinds[kind](k))
		}
		for _, tr := range []string{store.TransportGoRedis, store.TransportRueidis} {
			b.Run(kind+"/"+tr, func(b *testing.B) {
				reg := prometheus.NewRegistry()
				s, err := store.New(e.c, nil, store.Options{Timeout: 5 * time.Second, Registerer: reg, ReadTransport: tr})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				out := make([]store.ShardReply, len(keys))
				for range 20 { // the rueidis clients dial in the background
					for _, g := range groups {
						s.ReadShards(ctx, g, false, out)
					}
					time.Sleep(10 * time.Millisecond)
				}
				b.SetParallelism(8)
				b.ReportAllocs()
				cpu0, redis0 := processCPU(b), mastersCPU(b, e.cc)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					out := make([]store.ShardReply, len(keys))
					for pb.Next() {
						for _, g := range groups {
							s.ReadShards(ctx, g, false, out)
							for i := range g {
								if out[i].Err != nil || out[i].Open {
									b.Errorf("%+v", out[i])
									return
								}
							}
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "client-cpu-µs/op")
				b.ReportMetric(float64((mastersCPU(b, e.cc)-redis0).Microseconds())/float64(b.N), "redis-cpu-µs/op")
				if v := counterVecValue(b, reg, "rankgate_redis_direct_reads_total", "transport", tr); v < float64(b.N) {
					b.Fatalf("%s direct reads = %v, want ≥ %d", tr, v, b.N)
				}
			})
		}
	}
}

// processCPU is this process's user + system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mastersCPU is the CPU time the cluster's masters have used (INFO cpu:
// used_cpu_sys + used_cpu_user, summed).
func mastersCPU(b *testing.B, cc *redis.ClusterClient) time.Duration {
	var mu sync.Mutex
	var sum float64
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return err
				}
				mu.Lock()
				sum += f
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(sum * float64(time.Second))
}

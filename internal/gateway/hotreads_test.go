package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// countingBackend wraps the real store and changes only its read path
// (ReadShards): it counts seeks and fails the reads of chosen shard keys on cue.
type countingBackend struct {
	Backend
	seeks atomic.Int64
	mu    sync.Mutex
	fail  map[string]bool
}

// ReadShards counts the seeks of a batch and fails the reads of chosen shard
// keys; the rest go to the store as one pipeline.
func (c *countingBackend) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	c.mu.Lock()
	var pass []int
	for i, r := range reads {
		if r.Kind == store.ReadSeek {
			c.seeks.Add(1)
		}
		if c.fail[r.Key] {
			out[i] = store.ShardReply{Err: errors.New("injected shard failure")}
		} else {
			pass = append(pass, i)
		}
	}
	c.mu.Unlock()
	rs := make([]store.ShardRead, len(pass))
	os := make([]store.ShardReply, len(pass))
	for k, i := range pass {
		rs[k] = reads[i]
	}
	c.Backend.ReadShards(ctx, rs, replica, os)
	for k, i := range pass {
		out[i] = os[k]
	}
}

func (c *countingBackend) setFail(key string, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail == nil {
		c.fail = map[string]bool{}
	}
	c.fail[key] = on
}

// clock is an injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if !hasLabel(m, k, v) {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

const hotFamily = `  hot:
    period: all
    tie: member
    rank: ordinal
    cache_ttl: 1s
    dimensions:
      national: {shards: 16}
`

type hotEnv struct {
	svc *Service
	be  *countingBackend
	reg *prometheus.Registry
	clk *clock
	ref BoardRef
}

func newHotEnv(t *testing.T, members int) *hotEnv {
	t.Helper()
	e := &hotEnv{reg: prometheus.NewRegistry(), clk: &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)},
		ref: BoardRef{Family: "hot", Period: "all", Dimension: "national"}}
	e.svc = newClusterServiceWith(t, hotFamily, func(o *Options, st *store.Store) {
		e.be = &countingBackend{Backend: st}
		o.Backend, o.Registerer, o.Now = e.be, e.reg, e.clk.Now
	})
	ctx := context.Background()
	var evs []Event
	for i := 0; i < members; i++ {
		evs = append(evs, Event{EventID: fmt.Sprintf("e%d", i), Family: "hot", User: fmt.Sprintf("u%05d", i), Delta: ptr(int64(1 + i%97))})
		if len(evs) == 1000 || i == members-1 {
			items, err := e.svc.ApplyBatch(ctx, evs)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Err != nil {
					t.Fatal(it.Err)
				}
			}
			evs = evs[:0]
		}
	}
	return e
}

// A stampede of 500 concurrent clients on one cold board costs one fan-out.
func TestStampedeCostsOneFanout(t *testing.T) {
	t.Parallel()
	e := newHotEnv(t, 300)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	start := make(chan struct{})
	for i := 0; i < 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			page, err := e.svc.Top(ctx, e.ref, 10, ReadOptions{})
			if err == nil && len(page.Entries) != 10 {
				err = fmt.Errorf("%d entries", len(page.Entries))
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := metricValue(t, e.reg, "rankgate_fanout_width", map[string]string{"op": "top"}); n != 1 {
		t.Fatalf("500 concurrent cold reads made %v fan-outs, want 1", n)
	}
	if n := metricValue(t, e.reg, "rankgate_cache_requests_total", map[string]string{"result": "hit"}) +
		metricValue(t, e.reg, "rankgate_cache_shared_loads_total", nil); n != 499 {
		t.Fatalf("hits + shared = %v, want 499", n)
	}
}

func TestCacheTTLAndFreshness(t *testing.T) {
	t.Parallel()
	e := newHotEnv(t, 50)
	ctx := context.Background()
	first, err := e.svc.Top(ctx, e.ref, 3, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Source != SourcePrimary || first.MaxAge != time.Second {
		t.Fatalf("first read: source %s max-age %v", first.Source, first.MaxAge)
	}
	// A new leader appears; within the TTL the cached answer stands.
	if _, err := e.svc.ApplyEvent(ctx, Event{EventID: "boost", Family: "hot", User: "leader", Delta: ptr(int64(1000))}); err != nil {
		t.Fatal(err)
	}
	e.clk.Add(400 * time.Millisecond)
	cached, err := e.svc.Top(ctx, e.ref, 3, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cached.Source != SourceCache || cached.Entries[0].User == "leader" || cached.MaxAge != 600*time.Millisecond ||
		!cached.AsOf.Equal(first.AsOf) {
		t.Fatalf("within TTL: source %s max-age %v first %s as_of %v/%v", cached.Source, cached.MaxAge, cached.Entries[0].User, cached.AsOf, first.AsOf)
	}
	// primary bypasses the cache and sees it at once.
	prim, err := e.svc.Top(ctx, e.ref, 3, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil || prim.Entries[0].User != "leader" || prim.Source != SourcePrimary {
		t.Fatalf("primary read: %v %+v", err, prim)
	}
	// After the TTL the next cached read reloads.
	e.clk.Add(600 * time.Millisecond)
	fresh, err := e.svc.Top(ctx, e.ref, 3, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Source != SourcePrimary || fresh.Entries[0].User != "leader" {
		t.Fatalf("after TTL: source %s first %s", fresh.Source, fresh.Entries[0].User)
	}
	// Different limits are different answers.
	other, err := e.svc.Top(ctx, e.ref, 4, ReadOptions{})
	if err != nil || other.Source != SourcePrimary || len(other.Entries) != 4 {
		t.Fatalf("limit 4: %v source %s len %d", err, other.Source, len(other.Entries))
	}
}

func TestErrorsAndPartialAnswersAreNotCached(t *testing.T) {
	t.Parallel()
	e := newHotEnv(t, 200)
	ctx := context.Background()
	bad := e.svc.layout.ZKey(shard.Board{Family: "hot", Period: "all", DimType: shard.National}, 5, 16)
	e.be.setFail(bad, true)
	_, err := e.svc.Top(ctx, e.ref, 10, ReadOptions{})
	if rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("failing shard: %v, want unavailable", err)
	}
	page, err := e.svc.Top(ctx, e.ref, 10, ReadOptions{AllowPartial: true})
	if err != nil {
		t.Fatal(err)
	}
	if !page.Partial || len(page.MissingShards) != 1 || page.MissingShards[0] != 5 || page.MaxAge != 0 {
		t.Fatalf("partial answer: %+v", page.ReadMeta)
	}
	e.be.setFail(bad, false)
	seeks := e.be.seeks.Load()
	full, err := e.svc.Top(ctx, e.ref, 10, ReadOptions{AllowPartial: true})
	if err != nil || full.Partial || full.Source != SourcePrimary {
		t.Fatalf("after recovery: %v partial=%v source=%s", err, full.Partial, full.Source)
	}
	if e.be.seeks.Load() == seeks {
		t.Fatal("the partial answer was served from the cache")
	}
	exact, err := e.svc.Top(ctx, e.ref, 10, ReadOptions{})
	if err != nil || exact.Source != SourcePrimary {
		t.Fatalf("exact read after an error: %v source %s (errors must not be cached)", err, exact.Source)
	}
	if n := metricValue(t, e.reg, "rankgate_partial_answers_total", nil); n != 1 {
		t.Fatalf("partial answers counted %v, want 1", n)
	}
}

// Top-100 on 16 shards reads on average ≤ 2.5 entries per entry returned
// (asking every shard for 100 would read 16).
func TestAdaptiveDepthReadsFewEntries(t *testing.T) {
	t.Parallel()
	e := newHotEnv(t, 4000)
	ctx := context.Background()
	page, err := e.svc.Top(ctx, e.ref, 100, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 100 {
		t.Fatalf("%d entries", len(page.Entries))
	}
	fetched := metricValue(t, e.reg, "rankgate_read_entries_fetched_total", map[string]string{"op": "top"})
	returned := metricValue(t, e.reg, "rankgate_read_entries_returned_total", map[string]string{"op": "top"})
	ratio := fetched / returned
	t.Logf("top-100 over 16 shards: fetched %v entries for %v returned (%.2f per entry)", fetched, returned, ratio)
	if ratio > 2.5 {
		t.Fatalf("fetched %.2f entries per entry returned, want ≤ 2.5", ratio)
	}
}

func TestReplicaReads(t *testing.T) {
	t.Parallel()
	addrs := testcluster.Addrs(t)
	ro, err := store.NewClient(store.ClientOptions{Addrs: addrs, Cluster: true, ReadOnly: true, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	svc := newClusterServiceWith(t, hotFamily, func(o *Options, st *store.Store) {
		withRO, err := store.New(st.Primary(), ro, store.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		o.Backend = withRO
	})
	ctx := context.Background()
	for i := 0; i < 40; i++ {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "hot", User: fmt.Sprintf("u%d", i), Delta: ptr(int64(i + 1))}); err != nil {
			t.Fatal(err)
		}
	}
	// Replication is asynchronous: WAIT makes this test's writes reach the
	// replicas before it compares (a real client accepts the lag).
	waitReplicas(t, st(svc).Primary())
	ref := BoardRef{Family: "hot", Period: "all", Dimension: "national"}
	prim, err := svc.Top(ctx, ref, 20, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Top(ctx, ref, 20, ReadOptions{Consistency: ConsistencyReplica})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source != SourceReplica {
		t.Fatalf("source %s, want replica", rep.Source)
	}
	if fmt.Sprint(rep.Entries) != fmt.Sprint(prim.Entries) {
		t.Fatalf("replica top differs:\n%v\n%v", rep.Entries, prim.Entries)
	}
	ms, err := svc.Member(ctx, ref, "u7", ReadOptions{Consistency: ConsistencyReplica})
	if err != nil || ms.Source != SourceReplica || ms.Points != 8 {
		t.Fatalf("replica member: %v %+v", err, ms)
	}
	// Without a replica client, replica falls back to primary and says so.
	plain := newClusterService(t, hotFamily)
	pp, err := plain.Top(ctx, BoardRef{Family: "hot", Period: "all", Dimension: "national"}, 5, ReadOptions{Consistency: ConsistencyReplica})
	if err != nil || pp.Source != SourcePrimary {
		t.Fatalf("fallback: %v source %s", err, pp.Source)
	}
}

func st(s *Service) *store.Store {
	if c, ok := s.readBE.(*countingBackend); ok {
		return c.Backend.(*store.Store)
	}
	return s.readBE.(*store.Store)
}

func waitReplicas(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "WAIT", 1, 5000).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSnapshots(t *testing.T) {
	t.Parallel()
	e := newHotEnv(t, 120)
	ctx := context.Background()
	want, err := e.svc.Entries(ctx, e.ref, PageQuery{Limit: 100, HasOffset: true}, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.svc.CreateSnapshot(ctx, e.ref, 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Size != 100 || snap.Snapshot == "" {
		t.Fatalf("snapshot %+v", snap)
	}
	// The board moves on; the snapshot does not.
	if _, err := e.svc.ApplyEvent(ctx, Event{EventID: "late-leader", Family: "hot", User: "leader", Delta: ptr(int64(5000))}); err != nil {
		t.Fatal(err)
	}
	var got []rank.Entry
	for off := 0; off < 100; off += 30 {
		page, err := e.svc.Entries(ctx, e.ref, PageQuery{Limit: 30, Offset: off, HasOffset: true, Snapshot: snap.Snapshot}, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Entries...)
	}
	if fmt.Sprint(got) != fmt.Sprint(want.Entries) {
		t.Fatalf("snapshot pages differ from the board at snapshot time:\n%v\n%v", got, want.Entries)
	}
	// Past its depth a snapshot has nothing.
	page, err := e.svc.Entries(ctx, e.ref, PageQuery{Limit: 10, Offset: 100, HasOffset: true, Snapshot: snap.Snapshot}, ReadOptions{})
	if err != nil || len(page.Entries) != 0 {
		t.Fatalf("past depth: %v %d entries", err, len(page.Entries))
	}
	// Expiry (simulated by removing one shard's marker) → 410.
	k := e.svc.layout.Keys(shard.Board{Family: "hot", Period: "all", DimType: shard.National}, 3, 16)
	if err := st(e.svc).Primary().Del(ctx, k.SnapshotMarker(snap.Snapshot)).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Entries(ctx, e.ref, PageQuery{Limit: 10, HasOffset: true, Snapshot: snap.Snapshot}, ReadOptions{})
	if rank.CodeOf(err) != rank.CodeSnapshotExpired {
		t.Fatalf("expired snapshot: %v", err)
	}
	for _, c := range []struct {
		title string
		id    string
		depth int
		ttl   time.Duration
		code  rank.Code
	}{
		{"malformed id", "nope", 10, time.Minute, rank.CodeInvalidArgument},
		{"unknown id", "100x1x0123456789abcdef", 10, time.Minute, rank.CodeSnapshotExpired},
	} {
		_, err := e.svc.Entries(ctx, e.ref, PageQuery{Limit: 10, HasOffset: true, Snapshot: c.id}, ReadOptions{})
		if rank.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.title, err, c.code)
		}
	}
	for _, c := range []struct {
		title string
		depth int
		ttl   time.Duration
	}{{"depth 0", 0, time.Minute}, {"depth too big", 10001, time.Minute}, {"ttl too long", 10, 601 * time.Second}} {
		if _, err := e.svc.CreateSnapshot(ctx, e.ref, c.depth, c.ttl); rank.CodeOf(err) != rank.CodeInvalidArgument {
			t.Errorf("%s: %v", c.title, err)
		}
	}
}

func TestBoardsAndLayout(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, `  f:
    period: all
    dimensions:
      national: {shards: 8}
      province: {shards: 1}
`)
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		prov := []string{"zj", "gd", "bj"}[i%3]
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "f", User: fmt.Sprintf("u%d", i),
			Delta: ptr(int64(1)), Dims: map[string]string{"province": prov}}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := svc.Boards(ctx, "f", "all")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"national": 30, "province:bj": 10, "province:gd": 10, "province:zj": 10}
	if len(list.Boards) != len(want) {
		t.Fatalf("boards %+v", list.Boards)
	}
	for _, b := range list.Boards {
		if want[b.Dimension] != b.Members {
			t.Fatalf("board %s: %d members, want %d", b.Dimension, b.Members, want[b.Dimension])
		}
	}
	l, err := svc.Layout(ctx, "f", "all")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Nodes) != 3 || len(l.Boards) != 4 {
		t.Fatalf("layout: %d nodes, %d boards", len(l.Nodes), len(l.Boards))
	}
	var shards int
	var members int64
	for _, b := range l.Boards {
		for _, s := range b.Shards {
			shards++
			members += s.Members
			if s.Slot != shard.Slot(s.Key) || s.Node == "" || s.Node == "uncovered" || (s.Members > 0 && s.Memory <= 0) {
				t.Fatalf("shard placement %+v", s)
			}
		}
	}
	if shards != 8+3 || members != 60 {
		t.Fatalf("layout counts %d shards, %d members", shards, members)
	}
	// The pile-up warning fires for a board with every shard on one node.
	bp := BoardPlacement{Board: "x", Nodes: map[string]int{"a": 4}}
	if pileUp(bp, 4, 3) == "" || pileUp(BoardPlacement{Nodes: map[string]int{"a": 2, "b": 1, "c": 1}}, 4, 3) != "" {
		t.Fatal("pile-up rule wrong")
	}
}

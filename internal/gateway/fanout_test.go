package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// fakeBackend is a Backend without Redis: reads answer from canned per-shard
// data, and hooks fail or block a call on cue. The embedded (nil) Backend
// makes any method a test did not expect panic instead of answering.
type fakeBackend struct {
	Backend

	// seek answers Seek; nil: from shards.
	seek func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error)
	// count answers Count; nil: from shards.
	count func(ctx context.Context, key string, lo, hi int64) (int64, error)
	// shards holds each shard key's items in board order.
	shards map[string][]rank.Item

	// nodeOf groups shard keys into nodes; nil: every key its own node.
	nodeOf func(key string) string
	// batch, when set, sees every ReadShards call (one node's pipeline) with
	// its node and keys; an error fails every read of the pipeline, as a
	// node that is down or times out does.
	batch func(ctx context.Context, node string, keys []string) error

	write      func(ws []store.Write) []store.WriteResult
	recordLate func(pk shard.PeriodKeys, e store.LateEvent) (string, error)
	seq        atomic.Int64
}

func (f *fakeBackend) NodeOf(ctx context.Context, key string) string {
	if f.nodeOf != nil {
		return f.nodeOf(key)
	}
	return key
}

// ReadShards answers a node's batch through the per-shard methods, one after
// another as a pipeline does (a blocked read blocks the rest of its node).
func (f *fakeBackend) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	if f.batch != nil && len(reads) > 0 {
		keys := make([]string, len(reads))
		for i, r := range reads {
			keys[i] = r.Key
		}
		if err := f.batch(ctx, f.NodeOf(ctx, reads[0].Key), keys); err != nil {
			for i := range reads {
				out[i] = store.ShardReply{Err: err}
			}
			return
		}
	}
	readEach(ctx, f, reads, replica, out)
}

// perShard is the fake's per-shard reads, one method per read kind that
// ReadShards pipelines in the real store (positions are not served: a test
// that needs them reads the real cluster).
type perShard interface {
	Seek(ctx context.Context, key string, a store.SeekArgs, replica bool) (store.SeekResult, error)
	Scores(ctx context.Context, key string, members []string, replica bool) ([]int64, []bool, error)
	Count(ctx context.Context, key string, lo, hi int64, replica bool) (int64, error)
	Card(ctx context.Context, key string, replica bool) (int64, error)
}

var _ perShard = (*fakeBackend)(nil)

// readEach answers reads through be's per-shard methods.
func readEach(ctx context.Context, be perShard, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	for i, r := range reads {
		var o store.ShardReply
		switch r.Kind {
		case store.ReadSeek:
			o.Seek, o.Err = be.Seek(ctx, r.Key, r.Seek, replica)
		case store.ReadScores:
			o.Scores, o.Found, o.Err = be.Scores(ctx, r.Key, r.Members, replica)
		case store.ReadCount:
			o.N, o.Err = be.Count(ctx, r.Key, r.Lo, r.Hi, replica)
		case store.ReadCard:
			o.N, o.Err = be.Card(ctx, r.Key, replica)
		default:
			o.Err = fmt.Errorf("fake: read kind %d", r.Kind)
		}
		out[i] = o
	}
}

func (f *fakeBackend) Seek(ctx context.Context, key string, a store.SeekArgs, replica bool) (store.SeekResult, error) {
	if f.seek != nil {
		return f.seek(ctx, key, a)
	}
	return f.cannedSeek(key, a)
}

// cannedSeek serves the top of a shard, or the entries just after a place in
// it, like seek.lua: Start is the shard index of the first item, More counts
// scores ≥ MoreMin (-1 when not asked), StopMin ends the page.
func (f *fakeBackend) cannedSeek(key string, a store.SeekArgs) (store.SeekResult, error) {
	items := f.shards[key]
	var start int
	switch a.Mode {
	case store.SeekTop:
	case store.SeekAfter:
		place := rank.Item{Score: a.Score, Member: a.Member}
		for start < len(items) && !rank.Before(place, items[start]) {
			start++
		}
	default:
		return store.SeekResult{}, fmt.Errorf("fake: seek mode %q not served", a.Mode)
	}
	r := store.SeekResult{Start: int64(start), More: -1}
	if a.MoreMin != nil {
		r.More = 0
		for _, it := range items {
			if it.Score >= *a.MoreMin {
				r.More++
			}
		}
	}
	for _, it := range items[start:min(start+max(a.Limit, 0), len(items))] {
		if a.StopMin != nil && it.Score < *a.StopMin {
			break
		}
		r.Items = append(r.Items, it)
	}
	return r, nil
}

func (f *fakeBackend) Count(ctx context.Context, key string, lo, hi int64, replica bool) (int64, error) {
	if f.count != nil {
		return f.count(ctx, key, lo, hi)
	}
	var n int64
	for _, it := range f.shards[key] {
		if it.Score >= lo && it.Score <= hi {
			n++
		}
	}
	return n, nil
}

// Period answers an absent period, so configured shard counts apply.
func (f *fakeBackend) Period(ctx context.Context, pk shard.PeriodKeys) (store.PeriodState, error) {
	return store.PeriodState{}, nil
}

func (f *fakeBackend) EnsurePeriod(ctx context.Context, pk shard.PeriodKeys, shards map[string]int, rules string, nowMs int64) (store.PeriodState, error) {
	return store.PeriodState{Exists: true, State: "open", Shards: shards, Rules: rules}, nil
}

func (f *fakeBackend) TakeSeq(ctx context.Context, pk shard.PeriodKeys, n int64) (int64, error) {
	return f.seq.Add(n) - n + 1, nil
}

func (f *fakeBackend) RegisterBoards(ctx context.Context, pk shard.PeriodKeys, dims []string) error {
	return nil
}

func (f *fakeBackend) Write(ctx context.Context, ws []store.Write) []store.WriteResult {
	return f.write(ws)
}

func (f *fakeBackend) RecordLate(ctx context.Context, pk shard.PeriodKeys, e store.LateEvent) (string, error) {
	return f.recordLate(pk, e)
}

func (f *fakeBackend) Profiles(ctx context.Context, keys []string, replica bool) ([]map[string]string, error) {
	return make([]map[string]string, len(keys)), nil
}

func (f *fakeBackend) Ready(ctx context.Context) error { return nil }

func (f *fakeBackend) HasReplica() bool { return false }

const fakeConfig = `listen: "127.0.0.1:0"
redis:
  addrs: ["127.0.0.1:1"]
  prefix: "fk"
families:
  f:
    period: all
    dimensions:
      national: {shards: 4}
  one:
    period: all
    dimensions:
      national: {shards: 1}
`

// newFakeService builds a Service over fb; reg may be nil.
func newFakeService(t *testing.T, fb *fakeBackend, reg prometheus.Registerer, shardTimeout time.Duration) *Service {
	t.Helper()
	cfg, err := config.Parse([]byte(fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Options{Config: cfg, Backend: fb, Registerer: reg, ShardTimeout: shardTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// shardKeys maps every shard key of family fam's national board to its index.
func shardKeys(svc *Service, fam string) map[string]int {
	n := svc.cfg.Families[fam].Dimensions[shard.National].Shards
	b := shard.Board{Family: fam, Period: "all", DimType: shard.National}
	out := make(map[string]int, n)
	for i := 0; i < n; i++ {
		out[svc.layout.ZKey(b, i, n)] = i
	}
	return out
}

// cannedBoard fills fb.shards for family fam with 24 members placed by
// shard.Of (many equal points across shards) and returns the whole board in
// order with each member's shard.
func cannedBoard(t *testing.T, svc *Service, fb *fakeBackend, fam string) ([]rank.Item, map[string]int) {
	t.Helper()
	return cannedBoardOf(t, svc, fb, fam, 24, func(j, _ int) int64 { return int64(j%5) * 10 })
}

// cannedBoardOf fills fb.shards with count members m000…, member j on shard
// i (by shard.Of) scoring score(j, i).
func cannedBoardOf(t *testing.T, svc *Service, fb *fakeBackend, fam string, count int, score func(j, i int) int64) ([]rank.Item, map[string]int) {
	t.Helper()
	keys := shardKeys(svc, fam)
	n := len(keys)
	byIndex := make([]string, n)
	for k, i := range keys {
		byIndex[i] = k
	}
	fb.shards = map[string][]rank.Item{}
	home := map[string]int{}
	var all []rank.Item
	for j := 0; j < count; j++ {
		m := fmt.Sprintf("m%03d", j)
		i := shard.Of(m, n)
		it := rank.Item{Member: m, Score: score(j, i)}
		home[m] = i
		fb.shards[byIndex[i]] = append(fb.shards[byIndex[i]], it)
		all = append(all, it)
	}
	for _, k := range byIndex {
		if len(fb.shards[k]) == 0 {
			t.Fatalf("canned board leaves shard %s empty", k)
		}
		slices.SortFunc(fb.shards[k], cmpItems)
	}
	slices.SortFunc(all, cmpItems)
	return all, home
}

func cmpItems(a, b rank.Item) int {
	switch {
	case rank.Before(a, b):
		return -1
	case rank.Before(b, a):
		return 1
	}
	return 0
}

var errShardDown = errors.New("connection refused (fake)")

// TestFanoutShardErrorFailsRead: by default one failing shard fails the read
// with unavailable, naming the shard, with the cause in the chain.
func TestFanoutShardErrorFailsRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		fam  string
		fail int
	}{
		{"first of 4", "f", 0},
		{"last of 4", "f", 3},
		{"only shard", "one", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fb := &fakeBackend{}
			svc := newFakeService(t, fb, nil, time.Minute)
			cannedBoard(t, svc, fb, c.fam)
			keys := shardKeys(svc, c.fam)
			fb.seek = func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error) {
				if keys[key] == c.fail {
					return store.SeekResult{}, errShardDown
				}
				return fb.cannedSeek(key, a)
			}
			for _, partial := range []bool{false, true} {
				if partial && c.fam != "one" {
					continue // a partial read of several shards answers (TestFanoutAllowPartial)
				}
				_, err := svc.Top(context.Background(), nationalRef(c.fam, "all"), 10,
					ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: partial})
				wantRankErr(t, "top", err, rank.CodeUnavailable, "")
				if !errors.Is(err, errShardDown) {
					t.Fatalf("partial=%v: %v does not wrap the shard's error", partial, err)
				}
				if want := fmt.Sprintf("from shard %d", c.fail); !strings.Contains(err.Error(), want) {
					t.Fatalf("partial=%v: %q does not say %q", partial, err, want)
				}
			}
		})
	}
}

// TestFanoutFirstErrorCancelsOthers: the first failing shard cancels the
// calls still in flight on the other shards.
func TestFanoutFirstErrorCancelsOthers(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{}
	svc := newFakeService(t, fb, nil, time.Minute) // far beyond the test: only cancellation ends the blockers
	keys := shardKeys(svc, "f")
	const failing = 2
	started := make(chan int, len(keys))
	observed := make(chan error, len(keys))
	fb.seek = func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error) {
		if keys[key] != failing {
			started <- keys[key]
			<-ctx.Done()
			observed <- ctx.Err()
			return store.SeekResult{}, ctx.Err()
		}
		for range len(keys) - 1 { // fail only once every other shard is in flight
			<-started
		}
		return store.SeekResult{}, errShardDown
	}
	done := make(chan error, 1)
	go func() {
		_, err := svc.Top(context.Background(), nationalRef("f", "all"), 10, primaryRead)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Top did not return: the failing shard did not cancel the others")
	}
	wantRankErr(t, "top", err, rank.CodeUnavailable, "")
	if !errors.Is(err, errShardDown) || !strings.Contains(err.Error(), fmt.Sprintf("from shard %d", failing)) {
		t.Fatalf("err = %v, want the failing shard's error", err)
	}
	close(observed)
	n := 0
	for e := range observed {
		n++
		if !errors.Is(e, context.Canceled) {
			t.Fatalf("a blocked shard saw %v, want context.Canceled", e)
		}
	}
	if n != len(keys)-1 {
		t.Fatalf("%d blocked shards saw cancellation, want %d", n, len(keys)-1)
	}
}

// TestFanoutCallerCancel: the caller's own cancellation stays visible in the
// chain (the HTTP layer answers it as "client closed request").
func TestFanoutCallerCancel(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{}
	svc := newFakeService(t, fb, nil, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	keys := shardKeys(svc, "f")
	started := make(chan struct{}, len(keys))
	fb.seek = func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return store.SeekResult{}, ctx.Err()
	}
	go func() {
		for range len(keys) {
			<-started
		}
		cancel()
	}()
	_, err := svc.Top(ctx, nationalRef("f", "all"), 10, primaryRead)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled in the chain", err)
	}
}

// TestFanoutAllowPartial: with AllowPartial the answer is merged from the
// shards that answered, flagged partial with the missing shards; with every
// shard down it fails.
func TestFanoutAllowPartial(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		failing []int
		block   bool // the failing shards block until their deadline instead of erroring
	}{
		{"no failure", nil, false},
		{"one shard errors", []int{2}, false},
		{"two shards error", []int{0, 3}, false},
		{"one shard times out", []int{1}, true},
		{"every shard errors", []int{0, 1, 2, 3}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fb := &fakeBackend{}
			timeout := time.Minute
			if c.block {
				timeout = 50 * time.Millisecond // the blocked shard's own deadline ends it
			}
			reg := prometheus.NewRegistry()
			svc := newFakeService(t, fb, reg, timeout)
			all, home := cannedBoard(t, svc, fb, "f")
			keys := shardKeys(svc, "f")
			fail := func(ctx context.Context, key string) error {
				if !slices.Contains(c.failing, keys[key]) {
					return nil
				}
				if c.block {
					<-ctx.Done()
					return ctx.Err()
				}
				return errShardDown
			}
			fb.seek = func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error) {
				if err := fail(ctx, key); err != nil {
					return store.SeekResult{}, err
				}
				return fb.cannedSeek(key, a)
			}
			fb.count = func(ctx context.Context, key string, lo, hi int64) (int64, error) {
				if err := fail(ctx, key); err != nil {
					return 0, err
				}
				var n int64
				for _, it := range fb.shards[key] {
					if it.Score >= lo && it.Score <= hi {
						n++
					}
				}
				return n, nil
			}
			o := ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: true}
			page, err := svc.Top(context.Background(), nationalRef("f", "all"), 10, o)
			cnt, cerr := svc.Count(context.Background(), nationalRef("f", "all"), 10, 30, o)
			if len(c.failing) == len(keys) {
				wantRankErr(t, "top", err, rank.CodeUnavailable, "")
				wantRankErr(t, "count", cerr, rank.CodeUnavailable, "")
				for _, i := range c.failing {
					if !strings.Contains(err.Error(), fmt.Sprintf("from shard %d", i)) {
						t.Fatalf("%q does not name shard %d", err, i)
					}
				}
				if got := opCounter(t, reg, "rankgate_partial_answers_total", "top"); got != 0 {
					t.Fatalf("partial answers after a failed read = %v, want 0", got)
				}
				return
			}
			if err != nil || cerr != nil {
				t.Fatalf("top: %v; count: %v", err, cerr)
			}
			var want []rank.Item
			var wantCount int64
			for _, it := range all {
				if !slices.Contains(c.failing, home[it.Member]) {
					want = append(want, it)
					if it.Score >= 10 && it.Score <= 30 {
						wantCount++
					}
				}
			}
			want = want[:min(10, len(want))]
			if len(page.Entries) != len(want) {
				t.Fatalf("top = %+v, want %+v", page.Entries, want)
			}
			for i, w := range want {
				if e := page.Entries[i]; e.User != w.Member || e.Points != w.Score || e.Position != int64(i) {
					t.Fatalf("entry %d = %+v, want %+v (all %+v)", i, e, w, page.Entries)
				}
			}
			partial := len(c.failing) > 0
			for what, meta := range map[string]ReadMeta{"top": page.ReadMeta, "count": cnt.ReadMeta} {
				if meta.Partial != partial || !slices.Equal(meta.MissingShards, c.failing) {
					t.Fatalf("%s: partial %v missing %v, want %v %v", what, meta.Partial, meta.MissingShards, partial, c.failing)
				}
			}
			if cnt.Count != wantCount {
				t.Fatalf("count = %d, want %d", cnt.Count, wantCount)
			}
			wantN := 0.0
			if partial {
				wantN = 1
			}
			for _, op := range []string{"top", "count"} {
				if got := opCounter(t, reg, "rankgate_partial_answers_total", op); got != wantN {
					t.Fatalf("rankgate_partial_answers_total{op=%q} = %v, want %v", op, got, wantN)
				}
			}
		})
	}
}

// TestPartialAnswersMetric: the counter counts partial answers only, by
// operation.
func TestPartialAnswersMetric(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{}
	reg := prometheus.NewRegistry()
	svc := newFakeService(t, fb, reg, time.Minute)
	cannedBoard(t, svc, fb, "f")
	keys := shardKeys(svc, "f")
	var mu sync.Mutex
	down := map[int]bool{}
	fb.seek = func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error) {
		mu.Lock()
		d := down[keys[key]]
		mu.Unlock()
		if d {
			return store.SeekResult{}, errShardDown
		}
		return fb.cannedSeek(key, a)
	}
	setDown := func(shards ...int) {
		mu.Lock()
		defer mu.Unlock()
		clear(down)
		for _, i := range shards {
			down[i] = true
		}
	}
	ctx := context.Background()
	partial := ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: true}
	steps := []struct {
		name    string
		down    []int
		o       ReadOptions
		wantErr bool
		want    float64
	}{
		{"full answer", nil, partial, false, 0},
		{"partial answer", []int{1}, partial, false, 1},
		{"another partial answer", []int{0, 2}, partial, false, 2},
		{"failure without partial", []int{1}, primaryRead, true, 2},
		{"every shard down", []int{0, 1, 2, 3}, partial, true, 2},
		{"full answer again", nil, partial, false, 2},
	}
	for _, s := range steps {
		setDown(s.down...)
		_, err := svc.Top(ctx, nationalRef("f", "all"), 5, s.o)
		if (err != nil) != s.wantErr {
			t.Fatalf("%s: err = %v, want error %v", s.name, err, s.wantErr)
		}
		if got := opCounter(t, reg, "rankgate_partial_answers_total", "top"); got != s.want {
			t.Fatalf("%s: rankgate_partial_answers_total{op=top} = %v, want %v", s.name, got, s.want)
		}
	}
}

// counterValue gathers reg and returns the counter name{op=op} (0 when absent).
func opCounter(t *testing.T, reg *prometheus.Registry, name, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelOf(m, "op") == op {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestFrozenEventReviewFailure: an event refused because its board shard is
// frozen is answered period_closed ("kept for review") only when it was kept;
// when the review stream write fails the client must be told to retry, as
// for an event past its grace window.
func TestFrozenEventReviewFailure(t *testing.T) {
	t.Parallel()
	errStream := errors.New("XADD failed (fake)")
	at := time.Now().Add(-48 * time.Hour)
	cases := []struct {
		name      string
		ev        Event
		recordErr error
		code      rank.Code
	}{
		{"frozen, kept", sumEv("e1", "f", "u1", 1, nil), nil, rank.CodePeriodClosed},
		{"past grace, not kept", Event{EventID: "e2", Family: "d", User: "u1", Delta: ptr[int64](1), At: &at},
			errStream, rank.CodeUnavailable},
		// A frozen-board event whose review write failed must not be answered
		// "kept for review".
		{"frozen, not kept", sumEv("e3", "f", "u1", 1, nil), errStream, rank.CodeUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(fakeConfig + "  d:\n    period: day\n    grace: 1m\n    dimensions:\n      national: {shards: 2}\n"))
			if err != nil {
				t.Fatal(err)
			}
			var kept []store.LateEvent
			fb := &fakeBackend{
				write: func(ws []store.Write) []store.WriteResult {
					out := make([]store.WriteResult, len(ws))
					for i := range out {
						out[i] = store.WriteResult{Status: "closed", State: "frozen"}
					}
					return out
				},
				recordLate: func(pk shard.PeriodKeys, e store.LateEvent) (string, error) {
					if c.recordErr != nil {
						return "", c.recordErr
					}
					kept = append(kept, e)
					return "1-0", nil
				},
			}
			svc, err := New(Options{Config: cfg, Backend: fb})
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.ApplyEvent(context.Background(), c.ev)
			wantRankErr(t, c.name, err, c.code, "")
			if c.recordErr == nil && (len(kept) != 1 || kept[0].Reason != "frozen") {
				t.Fatalf("kept = %+v, want the event with reason frozen", kept)
			}
		})
	}
}

// TestFanoutSecondRound: a Top asks each shard for a first depth, then asks
// again only the shards that may hold more of the answer. A failure in that
// second round must behave like one in the first: name the real shard, and
// under AllowPartial answer partially (missing that shard) and count one
// partial answer for the read.
func TestFanoutSecondRound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		top       []int // shards whose members hold the top of the board
		members   int
		limit     int
		failAll   []int // shards failing every seek
		failAfter []int // shards failing only the second round (seek after)
		partial   bool
	}{
		{name: "no failure, one skewed shard", top: []int{1}, members: 80, limit: 10, partial: true},
		{name: "no failure, two skewed shards", top: []int{1, 3}, members: 160, limit: 40},
		{name: "one of two re-asked shards fails, partial", top: []int{1, 3}, members: 160, limit: 40, failAfter: []int{3}, partial: true},
		{name: "first and second round fail, partial", top: []int{0, 1}, members: 160, limit: 40, failAll: []int{2}, failAfter: []int{0}, partial: true},
		{name: "the only re-asked shard fails, partial", top: []int{1}, members: 80, limit: 10, failAfter: []int{1}, partial: true},
		{name: "the only re-asked shard fails", top: []int{1}, members: 80, limit: 10, failAfter: []int{1}},
		{name: "one of two re-asked shards fails", top: []int{1, 3}, members: 160, limit: 40, failAfter: []int{3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fb := &fakeBackend{}
			reg := prometheus.NewRegistry()
			svc := newFakeService(t, fb, reg, time.Minute)
			cannedBoardOf(t, svc, fb, "f", c.members, func(j, i int) int64 {
				if slices.Contains(c.top, i) {
					return 1000 + int64(j%7)
				}
				return int64(j % 7)
			})
			keys := shardKeys(svc, "f")
			var mu sync.Mutex
			afterAsked := map[int]bool{}
			fb.seek = func(ctx context.Context, key string, a store.SeekArgs) (store.SeekResult, error) {
				i := keys[key]
				if a.Mode == store.SeekAfter {
					mu.Lock()
					afterAsked[i] = true
					mu.Unlock()
				}
				if slices.Contains(c.failAll, i) || (a.Mode == store.SeekAfter && slices.Contains(c.failAfter, i)) {
					return store.SeekResult{}, fmt.Errorf("shard %d: %w", i, errShardDown)
				}
				return fb.cannedSeek(key, a)
			}
			page, err := svc.Top(context.Background(), nationalRef("f", "all"), c.limit,
				ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: c.partial})
			for _, i := range c.failAfter {
				if !afterAsked[i] {
					t.Fatalf("shard %d was not asked a second time: the case does not test what it says", i)
				}
			}
			failed := append(slices.Clone(c.failAll), c.failAfter...)
			slices.Sort(failed)
			if !c.partial && len(failed) > 0 {
				wantRankErr(t, "top", err, rank.CodeUnavailable, "")
				if want := fmt.Sprintf("from shard %d:", failed[0]); !strings.Contains(err.Error(), want) ||
					!strings.Contains(err.Error(), fmt.Sprintf("shard %d: %v", failed[0], errShardDown)) {
					t.Fatalf("err %q does not name shard %d as %q", err, failed[0], want)
				}
				return
			}
			if err != nil {
				t.Fatalf("top: %v", err)
			}
			// What each shard could give: nothing when down, its first round
			// when only the second failed, else everything.
			depth := readplan.FirstDepth(c.limit, len(keys))
			lists := make([][]rank.Item, len(keys))
			for k, i := range keys {
				switch {
				case slices.Contains(c.failAll, i):
				case slices.Contains(c.failAfter, i):
					lists[i] = fb.shards[k][:min(depth, len(fb.shards[k]))]
				default:
					lists[i] = fb.shards[k]
				}
			}
			var union []rank.Item
			for _, l := range lists {
				union = append(union, l...)
			}
			slices.SortFunc(union, cmpItems)
			want := union[:min(c.limit, len(union))]
			if len(page.Entries) != len(want) {
				t.Fatalf("top has %d entries, want %d", len(page.Entries), len(want))
			}
			for i, w := range want {
				if e := page.Entries[i]; e.User != w.Member || e.Points != w.Score {
					t.Fatalf("entry %d = %+v, want %+v", i, e, w)
				}
			}
			missing := slices.Clone(page.MissingShards)
			slices.Sort(missing)
			if page.Partial != (len(failed) > 0) || !slices.Equal(missing, failed) {
				t.Fatalf("partial %v missing %v, want %v %v", page.Partial, page.MissingShards, len(failed) > 0, failed)
			}
			wantN := 0.0
			if len(failed) > 0 {
				wantN = 1
			}
			if got := counterSum(t, reg, "rankgate_partial_answers_total"); got != wantN {
				t.Fatalf("rankgate_partial_answers_total summed over ops = %v, want %v", got, wantN)
			}
			if got := opCounter(t, reg, "rankgate_partial_answers_total", "top"); got != wantN {
				t.Fatalf("rankgate_partial_answers_total{op=top} = %v, want %v", got, wantN)
			}
		})
	}
}

// counterSum gathers reg and sums every series of the counter name.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

//go:build faults

package faults

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// Scenario 12: the read index (docs/architecture.md, "The read index") under faults. A second family,
// ix, keeps its national board (16 shards: every master holds several) in
// the gateway's read index, followed from the shards' change feeds by
// RunIndex. The load writes ix events (the suite's writers, prober and
// retries) and reads its Top 10 at consistency=index. After each fault the
// writes stop at t1, and the whole board read from the index as of t1 or
// later (source index) must equal a whole read from the masters
// (consistency=primary), entry by entry: user, points, position, rank.

const (
	ixFamily = "ix"
	ixShards = 16
	ixSeqCap = 10_000_000 // seq_capacity of ix: B of its score encoding
	// indexGoal: the index equals Redis within this of the promotion.
	indexGoal = 5 * time.Second
)

const ixFamilyYAML = `  ix:
    aggregate: sum
    order: desc
    period: all
    tie: first
    rank: competition
    max_points: 100000000
    seq_capacity: 10000000
    cache_ttl: 1s
    index: {enabled: true, max_lag: 30s}
    dimensions:
      national: {shards: 16}
`

var ixRef = gateway.BoardRef{Family: ixFamily, Period: "current", Dimension: shard.National}

// ixKeys are the keys of shard i of the ix national board.
func (s *stack) ixKeys(i int) shard.Keys {
	return s.layout.Keys(shard.Board{Family: ixFamily, Period: "all", DimType: shard.National}, i, ixShards)
}

// ixVictim picks the master holding the most ix shards among those that do
// not hold the ix period's keys (every Redis-only write bumps its counter).
func (s *stack) ixVictim(t *testing.T, tp topology) (victim int, shards []int) {
	t.Helper()
	period := tp.ownerOf(shard.Slot(s.layout.Period(ixFamily, "all").Meta))
	for _, m := range tp.masters() {
		if m == period {
			continue
		}
		var sh []int
		for i := 0; i < ixShards; i++ {
			if tp.ownerOf(shard.Slot(s.ixKeys(i).Z)) == m {
				sh = append(sh, i)
			}
		}
		if len(sh) > len(shards) {
			victim, shards = m, sh
		}
	}
	if victim == 0 {
		t.Fatalf("no master to fail (masters %s, period keys on %d)", joinPorts(tp.masters()), period)
	}
	return victim, shards
}

// indexLog keeps the index's own log lines ("index: …") of a gateway.
type indexLog struct {
	mu    sync.Mutex
	lines []logLine
}

type logLine struct {
	at   time.Time
	text string
}

func (l *indexLog) since(t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if !x.at.Before(t) {
			out = append(out, x.at.Format("15:04:05.000")+" "+x.text)
		}
	}
	return out
}

type indexLogHandler struct{ l *indexLog }

func (h indexLogHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }
func (h indexLogHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h indexLogHandler) WithGroup(string) slog.Handler                 { return h }
func (h indexLogHandler) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, "index:") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.l.mu.Lock()
	if len(h.l.lines) < 2000 {
		h.l.lines = append(h.l.lines, logLine{r.Time, b.String()})
	}
	h.l.mu.Unlock()
	return nil
}

// ixEnv is a stack with the ix family, its read index running, and a
// seeded load of ix events.
type ixEnv struct {
	c   *cluster
	s   *stack
	l   *load
	log *indexLog
}

func newIxEnv(t *testing.T, c *cluster, ledger bool, tag string) *ixEnv {
	t.Helper()
	e := &ixEnv{c: c, log: &indexLog{}}
	e.s = newStack(t, c, stackOptions{ledger: ledger, families: ixFamilyYAML, logger: slog.New(indexLogHandler{e.log})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.s.svc.RunIndex(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	s := e.s
	e.l = newLoad(s, tag, loadConfig{
		apply: func(ctx context.Context, ev *event, _ int) error {
			_, err := s.svc.ApplyEvent(ctx, gateway.Event{EventID: ev.id, Family: ixFamily, User: userName(ev.user), Delta: &ev.delta})
			return err
		},
		read: func(ctx context.Context, _ *rand.Rand) (string, error) {
			_, err := s.svc.Top(ctx, ixRef, 10, gateway.ReadOptions{Consistency: gateway.ConsistencyIndex})
			return ixFamily, err
		},
	})
	e.l.seed(t)
	// One quiet member per shard, which the load never writes: a flush
	// takes those of its master off the board for good (Redis-only) or
	// until a rebuild (ledger mode).
	ctx, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	for i := 0; i < ixShards; i++ {
		d := int64(5)
		if _, err := s.svc.ApplyEvent(ctx, gateway.Event{EventID: fmt.Sprintf("%s-quiet-%02d", tag, i), Family: ixFamily,
			User: quietMember(i), Delta: &d}); err != nil {
			t.Fatalf("quiet member %s: %v", quietMember(i), err)
		}
	}
	// The board is in the index before anything else happens.
	if at, _, diff := e.indexEqualsRedis(time.Now(), 20*time.Second); at.IsZero() {
		t.Fatalf("the seeded board did not load into the index: %s", diff)
	}
	return e
}

// quietMember is the quiet member of ix shard i.
func quietMember(i int) string {
	for k := 0; ; k++ {
		if m := fmt.Sprintf("quiet%02d-%d", i, k); shard.Of(m, ixShards) == i {
			return m
		}
	}
}

// ixMembers is how many members the ix board holds when nothing is lost.
const ixMembers = users + ixShards

// quietOn counts the quiet members on a board read.
func quietOn(entries []rank.Entry) int {
	n := 0
	for _, x := range entries {
		if strings.HasPrefix(x.User, "quiet") {
			n++
		}
	}
	return n
}

// top reads the whole ix board at a consistency.
func (e *ixEnv) top(ctx context.Context, level gateway.Consistency) (gateway.Page, error) {
	return e.s.svc.Top(ctx, ixRef, 1000, gateway.ReadOptions{Consistency: level})
}

// asOf answers when the index answers for the board as of (zero: it does
// not answer from the index now).
func (e *ixEnv) asOf() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := e.s.svc.Count(ctx, ixRef, -1<<62, 1<<62, gateway.ReadOptions{Consistency: gateway.ConsistencyIndex})
	if err != nil || c.Source != gateway.SourceIndex {
		return time.Time{}
	}
	return c.AsOf
}

// indexEqualsRedis polls (20 ms) until the whole board read from the index,
// as of since or later (source index), equals a whole read from the masters
// entry by entry. It answers when (zero: not within bound) and the last
// difference seen. With the writes stopped before since, the first answer
// as of since or later must already be equal — "every write acknowledged
// before as_of is in it" — and first is its difference ("" when equal).
func (e *ixEnv) indexEqualsRedis(since time.Time, bound time.Duration) (at time.Time, first, last string) {
	deadline := time.Now().Add(bound)
	last = "no answer"
	firstSeen := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, err := e.top(ctx, gateway.ConsistencyIndex)
		switch {
		case err != nil:
			last = "index read: " + err.Error()
		case got.Source != gateway.SourceIndex:
			last = fmt.Sprintf("answered from %s: the board is not ready in the index", got.Source)
		case got.AsOf.Before(since):
			last = fmt.Sprintf("index as of %s, before %s", got.AsOf.Format("15:04:05.000"), since.Format("15:04:05.000"))
		default:
			want, err := e.top(ctx, gateway.ConsistencyPrimary)
			if err != nil {
				last = "primary read: " + err.Error()
				break
			}
			d := boardDiff(want.Entries, got.Entries)
			if !firstSeen {
				firstSeen, first = true, d
				if d != "" {
					first = fmt.Sprintf("as of %s: %s", got.AsOf.Format("15:04:05.000"), d)
				}
			}
			if d == "" {
				cancel()
				return time.Now(), first, ""
			}
			last = "the index differs from Redis: " + d
		}
		cancel()
		if time.Now().After(deadline) {
			return time.Time{}, first, last
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustEqual is indexEqualsRedis, failing the test (and printing the
// index's log since logFrom) when the index does not equal Redis within
// bound, or when its first answer as of since or later differs.
func (e *ixEnv) mustEqual(t *testing.T, what string, since time.Time, bound time.Duration, logFrom time.Time) time.Time {
	t.Helper()
	at, first, last := e.indexEqualsRedis(since, bound)
	bad := false
	if at.IsZero() {
		t.Errorf("%s: the index did not equal Redis within %s: %s", what, bound, last)
		bad = true
	}
	if first != "" {
		t.Errorf("%s: the index answered as of a time after the writes stopped, yet without every acknowledged write: %s", what, first)
		bad = true
	}
	if bad {
		e.dumpLog(t, logFrom)
	}
	return at
}

// boardDiff compares a board read from Redis (want) with one read from the
// index (got): "" when equal entry by entry (user, points, position, rank),
// else how many members differ, with examples.
func boardDiff(want, got []rank.Entry) string {
	if d := diffEntries(want, got); d == "" {
		return ""
	}
	w, g := map[string]int64{}, map[string]int64{}
	for _, x := range want {
		w[x.User] = x.Points
	}
	for _, x := range got {
		g[x.User] = x.Points
	}
	var diffs []string
	for u, p := range w {
		if q, ok := g[u]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s missing (Redis %d)", u, p))
		} else if q != p {
			diffs = append(diffs, fmt.Sprintf("%s index %d, Redis %d", u, q, p))
		}
	}
	for u, q := range g {
		if _, ok := w[u]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s only in the index (%d)", u, q))
		}
	}
	sort.Strings(diffs)
	n := len(diffs)
	if n > 6 {
		diffs = append(diffs[:6], "…")
	}
	if n == 0 {
		return fmt.Sprintf("same members and points, order differs: %s", diffEntries(want, got))
	}
	return fmt.Sprintf("%d of %d members differ (%d in the index): %s", n, len(want), len(got), strings.Join(diffs, "; "))
}

// reloads reads rankgate_index_reloads_total by reason.
func (s *stack) reloads(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "rankgate_index_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[labelOf(m, "reason")] += counterValue(m)
		}
	}
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// grew is after − before, by reason.
func grew(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, r := range []string{"gap", "card", "reset"} {
		out[r] = after[r] - before[r]
	}
	return out
}

func reloadString(d map[string]float64) string {
	return fmt.Sprintf("gap %.0f, card %.0f, reset %.0f", d["gap"], d["card"], d["reset"])
}

// shortMembers counts members whose points on a board read from Redis are
// below the sum of their acknowledged ix events (Redis-only mode: writes
// lost with a master).
func (e *ixEnv) shortMembers(entries []rank.Entry) int {
	acked := map[string]int64{}
	e.l.mu.Lock()
	for _, ev := range e.l.events {
		if ev.acked {
			acked[userName(ev.user)] += ev.delta
		}
	}
	e.l.mu.Unlock()
	got := map[string]int64{}
	for _, x := range entries {
		got[x.User] = x.Points
	}
	n := 0
	for u, a := range acked {
		if got[u] < a {
			n++
		}
	}
	return n
}

// ledgerRebuild (the writes stopped) re-projects what is pending, rebuilds
// the ix board from the ledger (a reset entry on every shard's feed) and
// checks that the index equals the rebuilt board and Redis the ledger. It
// answers the reset reloads it caused, the drift it repaired and how long
// from the rebuild's start until the index equalled the rebuilt board.
func (e *ixEnv) ledgerRebuild(t *testing.T, what string) (resets float64, driftBefore int64, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 20; i++ {
		n, err := e.s.svc.ProjectPending(ctx, 0)
		if err != nil {
			t.Fatalf("%s: ProjectPending: %v", what, err)
		}
		if n == 0 {
			break
		}
	}
	rep, err := e.s.svc.Reconcile(ctx, ixRef)
	if err != nil {
		t.Fatalf("%s: reconcile: %v", what, err)
	}
	before := e.s.reloads(t)
	start := time.Now()
	if _, err := e.s.svc.Rebuild(ctx, ixRef); err != nil {
		t.Fatalf("%s: rebuild: %v", what, err)
	}
	at := e.mustEqual(t, what, time.Now(), 10*time.Second, start)
	resets = grew(before, e.s.reloads(t))["reset"]
	after, err := e.s.svc.Reconcile(ctx, ixRef)
	if err != nil {
		t.Fatalf("%s: reconcile: %v", what, err)
	}
	if after.Drifted != 0 {
		t.Errorf("%s: Redis drifts from the ledger after the rebuild: %d members, first %+v", what, after.Drifted, after.Drift[0])
	}
	if resets < ixShards {
		t.Errorf("%s: the rebuild swapped %d shards; the index reloaded %.0f on a reset", what, ixShards, resets)
	}
	if at.IsZero() {
		return resets, rep.Drifted, -1
	}
	return resets, rep.Drifted, at.Sub(start)
}

// dumpLog prints the index's log lines from a time on.
func (e *ixEnv) dumpLog(t *testing.T, from time.Time) {
	t.Helper()
	lines := e.log.since(from)
	if len(lines) > 80 {
		lines = append(lines[:80], fmt.Sprintf("… %d more", len(lines)-80))
	}
	for _, l := range lines {
		t.Logf("  log: %s", l)
	}
}

// Scenario 12: the read index under faults, in Redis-only and ledger mode,
// each on its cluster (node timeout 1 s), one fresh key prefix per step:
// (ledger) a rebuild swap, a FLUSHALL of one master, a SIGKILL of a master,
// and a SIGKILL of a master whose replica lags (writes the index applied
// are lost with it).
func TestIndexUnderFaults(t *testing.T) {
	modes(t, baseIndexRedis, baseIndexLedger, func(t *testing.T, base int, ledger bool) {
		c := getCluster(t, base)
		healthy := func(t *testing.T) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			if err := c.waitHealthy(ctx, 40*time.Second); err != nil {
				t.Fatalf("cluster %d not healthy: %v", base, err)
			}
		}
		if ledger {
			t.Run("rebuild", func(t *testing.T) { healthy(t); indexRebuild(t, c) })
		}
		t.Run("flush", func(t *testing.T) { healthy(t); indexFlush(t, c, ledger) })
		t.Run("kill", func(t *testing.T) { healthy(t); indexKill(t, c, ledger, false) })
		t.Run("kill-lagging-replica", func(t *testing.T) { healthy(t); indexKill(t, c, ledger, true) })
	})
}

// indexRebuild (ledger mode): members that only Redis holds (a stray
// write, with its feed entry: the index follows it) and a rebuild from the
// ledger under writes. The swap's reset entries must reload every shard:
// the stray members leave the index, which equals the rebuilt board.
func indexRebuild(t *testing.T, c *cluster) {
	e := newIxEnv(t, c, true, "ixrb")
	e.l.start(time.Minute)
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One stray member per shard, written as a script would: ZADD and its
	// feed entry in one call.
	enc := rank.Encoding{B: ixSeqCap, MaxPoints: 100_000_000}
	stray := map[string]int64{}
	for i := 0; i < ixShards; i++ {
		m := ""
		for k := 0; m == "" || shard.Of(m, ixShards) != i; k++ {
			m = fmt.Sprintf("stray%02d-%d", i, k)
		}
		pts := int64(900_000 + i)
		sc, err := enc.Score(pts, 0)
		if err != nil {
			t.Fatal(err)
		}
		k := e.s.ixKeys(i)
		if err := e.s.rw.Eval(ctx, `redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', '100000', '*', 'm', ARGV[1], 's', ARGV[2])`,
			[]string{k.Z, k.Feed}, m, fmt.Sprint(sc)).Err(); err != nil {
			t.Fatalf("stray write on shard %d: %v", i, err)
		}
		stray[m] = pts
	}
	// The index follows them (it is a cache of Redis).
	if !waitFor(10*time.Second, func() bool {
		p, err := e.top(ctx, gateway.ConsistencyIndex)
		if err != nil || p.Source != gateway.SourceIndex {
			return false
		}
		n := 0
		for _, x := range p.Entries {
			if pts, ok := stray[x.User]; ok && pts == x.Points {
				n++
			}
		}
		return n == len(stray)
	}) {
		t.Fatalf("the index did not follow the %d stray members' feed entries", len(stray))
	}
	// The rebuild, while the writes go on.
	before := e.s.reloads(t)
	start := time.Now()
	if _, err := e.s.svc.Rebuild(ctx, ixRef); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	took := time.Since(start)
	time.Sleep(500 * time.Millisecond) // writes go on after the swap
	e.l.finish(t)
	t1 := time.Now()
	at := e.mustEqual(t, "after a rebuild under writes", t1, 10*time.Second, start)
	resets := grew(before, e.s.reloads(t))["reset"]
	p, err := e.top(ctx, gateway.ConsistencyIndex)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range p.Entries {
		if _, ok := stray[x.User]; ok {
			t.Errorf("the index still holds %s (%d points) after the rebuild dropped it", x.User, x.Points)
		}
	}
	if resets < ixShards {
		t.Errorf("the rebuild swapped %d shards; the index reloaded %.0f on a reset", ixShards, resets)
	}
	// A second rebuild, writes stopped: Redis equals the ledger after it.
	resets2, _, took2 := e.ledgerRebuild(t, "rebuild, writes stopped")
	cn := e.l.counts()
	na := outage{na: true}
	t.Log(resultLine("12c rebuild swap of an indexed board", e.s.mode(), na, na,
		fmt.Sprintf("stray=%d under_writes:rebuild=%s,reset_reloads=%.0f,index_equal_after_writes_stopped=%s writes_stopped:reset_reloads=%.0f,rebuild_to_index_equal=%s writes=%d/%d_failed members=%d",
			len(stray), took.Round(time.Millisecond), resets, since(t1, at), resets2, dur(took2), cn.writes, cn.writeErrs, len(p.Entries))))
}

// indexFlush: FLUSHALL on one master under writes. The follower finds the
// flushed shards' feeds gone (a gap) and reloads them; with the writes
// stopped the index equals Redis. Ledger mode then rebuilds the board from
// the ledger: the index equals the rebuilt board, every member back.
func indexFlush(t *testing.T, c *cluster, ledger bool) {
	e := newIxEnv(t, c, ledger, "ixfl")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim, shards := e.s.ixVictim(t, tp)
	e.l.start(time.Minute)
	time.Sleep(time.Second)
	before := e.s.reloads(t)
	keys, _ := c.node(victim).DBSize(ctx).Result()
	t0 := time.Now()
	if err := c.node(victim).FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL on %d: %v", victim, err)
	}
	time.Sleep(time.Second) // writes go on
	e.l.finish(t)
	t1 := time.Now()
	at := e.mustEqual(t, fmt.Sprintf("after FLUSHALL on %d", victim), t1, 10*time.Second, t0)
	d := grew(before, e.s.reloads(t))
	if d["gap"]+d["card"] < float64(len(shards)) {
		t.Errorf("FLUSHALL emptied %d shards %v; the index reloaded %s", len(shards), shards, reloadString(d))
		e.dumpLog(t, t0)
	}
	p, err := e.top(ctx, gateway.ConsistencyIndex)
	if err != nil {
		t.Fatal(err)
	}
	if q := quietOn(p.Entries); q != ixShards-len(shards) {
		t.Errorf("after FLUSHALL of %d shards the index holds %d quiet members, want %d", len(shards), q, ixShards-len(shards))
	}
	rest := fmt.Sprintf("victim=%d shards=%d keys_flushed=%d reloads=[%s] flush_to_index_equal=%s after_writes_stopped=%s members_after=%d/%d",
		victim, len(shards), keys, reloadString(d), since(t0, at), since(t1, at), len(p.Entries), ixMembers)
	if ledger {
		resets, drift, took := e.ledgerRebuild(t, "rebuild after the flush")
		q, err := e.top(ctx, gateway.ConsistencyIndex)
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Entries) != ixMembers {
			t.Errorf("after the rebuild the index holds %d members, want %d", len(q.Entries), ixMembers)
		}
		if drift < int64(len(shards)) {
			t.Errorf("the flush of %d shards left drift %d: less than their quiet members", len(shards), drift)
		}
		rest += fmt.Sprintf(" drift_before_rebuild=%d reset_reloads=%.0f rebuild_to_index_equal=%s members_rebuilt=%d",
			drift, resets, dur(took), len(q.Entries))
	}
	na := outage{na: true}
	t.Log(resultLine("12b FLUSHALL one master under writes, read index", e.s.mode(), na, na, rest))
}

// indexKill: SIGKILL a master under writes (lagging: after holding its
// replica back, so that writes the index applied never reach the replica
// and are lost with the master). Writes go on until an affected write
// succeeded after the promotion and the index answers as of a time after
// it; then they stop at t1, and the index must equal Redis (as of t1 or
// later) within indexGoal of the promotion.
func indexKill(t *testing.T, c *cluster, ledger, lagging bool) {
	tag := "ixk"
	if lagging {
		tag = "ixkl"
	}
	e := newIxEnv(t, c, ledger, tag)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim, shards := e.s.ixVictim(t, tp)
	pid, err := c.pid(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	reps := tp.replicasOf(victim)
	if len(reps) == 0 {
		t.Fatalf("master %d has no replica", victim)
	}
	onVictim := map[int]bool{}
	for _, i := range shards {
		onVictim[i] = true
	}
	aff := make([]bool, users)
	for i := range aff {
		aff[i] = onVictim[shard.Of(userName(i), ixShards)]
	}
	affected := func(x op) bool { return x.write && aff[x.user] }
	t.Logf("%s mode; victim master %d (pid %d, replica %s) holds ix shards %v; period keys on %d",
		e.s.mode(), victim, pid, joinPorts(reps), shards, tp.ownerOf(shard.Slot(e.s.layout.Period(ixFamily, "all").Meta)))

	e.l.start(2 * time.Minute)
	time.Sleep(1500 * time.Millisecond)
	before := e.s.reloads(t)
	stall := ""
	var rpid int
	if lagging {
		// Hold the replica back: SIGSTOP it, then fill the replication
		// link with an 8 MB value on the victim (in one of its slots):
		// more than the kernel's socket buffers take (a killed process's
		// socket still delivers what they hold), so that every write after
		// it waits in the victim's own output buffer, and dies with it.
		if rpid, err = c.pid(ctx, reps[0]); err != nil {
			t.Fatal(err)
		}
		junk := e.s.ixKeys(shards[0]).Z + ":junk"
		if shard.Slot(junk) != shard.Slot(e.s.ixKeys(shards[0]).Z) {
			t.Fatalf("%s is not in its shard's slot", junk)
		}
		big := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("%s:%d", host, victim), ReadTimeout: 10 * time.Second,
			WriteTimeout: 10 * time.Second, MaxRetries: -1})
		defer big.Close()
		value := strings.Repeat("x", 8<<20)
		if err := c.signal(rpid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		tStop := time.Now()
		if err := big.Set(ctx, junk, value, 0).Err(); err != nil {
			_ = c.signal(rpid, syscall.SIGCONT)
			t.Fatalf("SET %s: %v", junk, err)
		}
		tStall := time.Now()
		time.Sleep(250 * time.Millisecond)
		tMark := time.Now()
		// The index has applied every write acknowledged before tMark:
		// those to the victim's shards are lost with it.
		applied := waitFor(time.Second, func() bool { return !e.asOf().Before(tMark) })
		if !applied {
			t.Errorf("the index did not catch up within 1 s before the kill: writes it applied cannot be lost with the master")
		}
		e.l.mu.Lock()
		lostAcked := 0
		for _, ev := range e.l.events {
			if ev.acked && aff[ev.user] && ev.ackedAt.After(tStall.Add(50*time.Millisecond)) && ev.ackedAt.Before(tMark) {
				lostAcked++
			}
		}
		e.l.mu.Unlock()
		stall = fmt.Sprintf(" replica_stopped=%s index_applied_before_kill=%v acked_to_victim_behind_the_value=%d",
			time.Since(tStop).Round(time.Millisecond), applied, lostAcked)
		t.Logf("replica %d stopped for %s (the 8 MB SET took %s); %d writes to the victim's shards acknowledged behind it; the index applied them: %v",
			reps[0], time.Since(tStop).Round(time.Millisecond), tStall.Sub(tStop).Round(time.Millisecond), lostAcked, applied)
	}
	t0 := time.Now()
	if err := c.signal(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if lagging {
		if err := c.signal(rpid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	tl := c.watch(t0, tp, victim)
	mw := e.s.watchKey(t0, e.s.ixKeys(shards[0]).Z)
	var promoted, indexBack time.Time
	deadline := t0.Add(25 * time.Second)
	for time.Now().Before(deadline) {
		tl.mu.Lock()
		p := tl.promote
		tl.mu.Unlock()
		if p > 0 {
			promoted = t0.Add(p)
			if indexBack.IsZero() && !e.asOf().Before(promoted) {
				indexBack = time.Now()
			}
			if !indexBack.IsZero() && e.l.outageOf(true, promoted, affected).d >= 0 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	w := e.l.outageOf(true, t0, affected)
	e.l.finish(t)
	t1 := time.Now()
	at, first, diff := e.indexEqualsRedis(t1, 15*time.Second)
	tl.stop()
	mw.stop()
	t.Logf("redis: %s; client slot map moved %s", tl, mw)
	if promoted.IsZero() {
		t.Fatalf("no replica of %d promoted within 25 s", victim)
	}
	if indexBack.IsZero() {
		t.Errorf("the index never answered as of a time after the promotion (within %s of the kill)", deadline.Sub(t0))
	}
	d := grew(before, e.s.reloads(t))
	eq := at.Sub(promoted)
	switch {
	case at.IsZero():
		t.Errorf("the index did not equal Redis within 15 s after the writes stopped (%s after the promotion): %s",
			time.Since(promoted).Round(time.Millisecond), diff)
	case eq > indexGoal:
		t.Errorf("the index equalled Redis %s after the promotion, more than %s", eq.Round(time.Millisecond), indexGoal)
	}
	if first != "" {
		t.Errorf("the index answered as of a time after the writes stopped, yet without every acknowledged write: %s", first)
	}
	if lagging && d["gap"]+d["card"] == 0 {
		t.Errorf("writes the index had applied were lost with master %d, yet no shard reloaded (%s)", victim, reloadString(d))
	}
	if t.Failed() {
		e.dumpLog(t, t0.Add(-2*time.Second))
	}
	p, err := e.top(ctx, gateway.ConsistencyPrimary)
	if err != nil {
		t.Fatal(err)
	}
	short := e.shortMembers(p.Entries)
	if lagging && !ledger && short == 0 {
		t.Errorf("no acknowledged write was lost with master %d: the lagging replica did not lag", victim)
	}
	cn := e.l.counts()
	rest := fmt.Sprintf("redis=[%s] map_moved=%s promotion_to_index_back=%s promotion_to_index_equal=%s(goal %s) after_writes_stopped=%s reloads=[%s] members_short_in_redis=%d writes=%d/%d_failed%s",
		tl, mw, since(promoted, indexBack), since(promoted, at), indexGoal, since(t1, at), reloadString(d), short, cn.writes, cn.writeErrs, stall)
	if ledger {
		resets, drift, took := e.ledgerRebuild(t, "rebuild after the failover")
		if lagging && drift == 0 {
			t.Errorf("no acknowledged write was lost with master %d (no drift from the ledger): the lagging replica did not lag", victim)
		}
		rest += fmt.Sprintf(" drift_before_rebuild=%d reset_reloads=%.0f rebuild_to_index_equal=%s", drift, resets, dur(took))
	}
	scenario := "12a SIGKILL master under writes, read index"
	if lagging {
		scenario = "12a' SIGKILL master whose replica lags, read index"
	}
	t.Log(resultLine(scenario, e.s.mode(), w, outage{na: true}, rest))
	// Bring the killed node back as a replica, for the next step.
	if err := c.restart(ctx, victim); err != nil {
		t.Errorf("restarting %d: %v", victim, err)
	}
}

// since prints b − a, or "never" when either is unset.
func since(a, b time.Time) string {
	if a.IsZero() || b.IsZero() {
		return "never"
	}
	return b.Sub(a).Round(10 * time.Millisecond).String()
}

// dur prints a duration (negative: "never").
func dur(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

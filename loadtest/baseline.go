package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/workload"
)

// Baseline does, for every operation, the Redis work the gateway does —
// the same read plan (internal/readplan: per-node pipelines, depth, merge,
// positions), the same commands and scripts through internal/store, the same
// keys from internal/shard — in process, with no HTTP, JSON, cache, validation or logging. It is the
// yardstick of the gateway's overhead: a run prints gateway/baseline.
//
// What it leaves out on purpose: the read cache (every baseline read goes to
// Redis, so a cached gateway read can beat it), request decoding and answer
// encoding, metrics and per-event log lines.
type Baseline struct {
	w        *World
	st       *store.Store
	close    func()
	fam      *config.Family
	enc      rank.Encoding
	mode     rank.RankMode
	agg      string // sum | gt | lt in stored space
	periodID string
	pk       shard.PeriodKeys
	shards   []int            // board → shard count
	keys     [][]shard.Keys   // board → shard → keys
	zkeys    [][]string       // board → shard → sorted-set key
	rp       *readplan.Reader // the gateway's read plan, without its metrics
	replica  bool             // consistency=replica reads replicas
}

// baselineShardTimeout is the gateway's default per-node fan-out deadline.
const baselineShardTimeout = time.Second

// loadGatewayConfig reads the gateway config the way cmd/gateway does
// (file, then RANKGATE_* env overrides, then validation).
func loadGatewayConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	cfg.ApplyEnv(os.Getenv)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// NewBaseline connects to the cluster named in cfg, preloads the scripts on
// every node (as the gateway does at start), and records the period and its
// boards the way the gateway's first write would.
func NewBaseline(ctx context.Context, w *World, cfg *config.Config) (*Baseline, error) {
	for _, a := range cfg.Redis.Addrs {
		if err := checkLoopbackAddr(a); err != nil {
			return nil, fmt.Errorf("redis.addrs: %w", err)
		}
	}
	fam, ok := cfg.Families[w.sc.Family]
	if !ok {
		return nil, fmt.Errorf("family %q is not in %s", w.sc.Family, w.sc.Config)
	}
	if fam.Projection() {
		return nil, fmt.Errorf("family %q takes projections; the load tool drives events families", fam.Name)
	}
	st, replica, closeAll, err := openBaselineStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b := &Baseline{w: w, st: st, close: closeAll, fam: fam, replica: replica,
		rp: &readplan.Reader{Backend: st, Timeout: baselineShardTimeout}}
	b.enc, b.mode, b.agg = fam.Encoding(), fam.RankMode(), fam.StoredMode()
	spec := fam.PeriodSpec()
	now := time.Now()
	p := spec.At(now)
	if w.sc.Period != "current" {
		if p, err = spec.Parse(w.sc.Period); err != nil {
			closeAll()
			return nil, err
		}
	}
	if err := b.registerBoards(ctx, shard.Layout{Prefix: cfg.Redis.Prefix}, p.ID, now); err != nil {
		closeAll()
		return nil, err
	}
	return b, nil
}

// openBaselineStore builds the store the gateway would on cfg: the cluster
// (or standalone) client with the scripts preloaded on every node, and the
// replica-reading client when replica reads are on. closeAll closes both.
func openBaselineStore(ctx context.Context, cfg *config.Config) (*store.Store, bool, func(), error) {
	opts := store.ClientOptions{
		Addrs: cfg.Redis.Addrs, Username: cfg.Redis.Username, Password: cfg.Redis.Password(os.Getenv),
		DialTimeout: cfg.Redis.DialTimeout, ReadTimeout: cfg.Redis.ReadTimeout, WriteTimeout: cfg.Redis.WriteTimeout,
		PoolSize: cfg.Redis.PoolSize, ReloadInterval: cfg.Redis.ClusterReloadInterval,
		Health: new(store.NodeHealth), // the clients' and the store's, as the gateway shares it
	}
	if cfg.Redis.TLS {
		return nil, false, nil, errors.New("the baseline does not speak TLS to Redis; run it against a local cluster")
	}
	rw, err := store.NewClient(opts)
	if err != nil {
		return nil, false, nil, err
	}
	closers := []func() error{rw.Close}
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = store.Preload(pctx, rw)
	cancel()
	if err != nil {
		closeAll()
		return nil, false, nil, err
	}
	// The replica-reading client, as the gateway builds it.
	var ro redis.UniversalClient
	if _, cluster := rw.(*redis.ClusterClient); cfg.Redis.ReplicaReads && cluster {
		roOpts := opts
		roOpts.ReadOnly, roOpts.Cluster = true, true // rw is a cluster client: no need to ask the seed again
		if ro, err = store.NewClient(roOpts); err != nil {
			closeAll()
			return nil, false, nil, err
		}
		closers = append(closers, ro.Close)
	}
	replica := ro != nil
	st, err := store.New(rw, ro, store.Options{Timeout: cfg.Redis.ReadTimeout + cfg.Redis.WriteTimeout, Health: opts.Health})
	if err != nil {
		closeAll()
		return nil, false, nil, err
	}
	return st, replica, closeAll, nil
}

// registerBoards records the period and the run's boards the way the
// gateway's first write would, and keeps every board's shard keys.
func (b *Baseline) registerBoards(ctx context.Context, layout shard.Layout, periodID string, now time.Time) error {
	fam := b.fam
	b.periodID = periodID
	b.pk = layout.Period(fam.Name, periodID)
	want := map[string]int{}
	for t, d := range fam.Dimensions {
		want[t] = d.Shards
	}
	ps, err := b.st.EnsurePeriod(ctx, b.pk, want, fam.RulesVersion, now.UnixMilli())
	if err != nil {
		return err
	}
	var dims []string
	for bi, bd := range b.w.boards {
		n, ok := ps.Shards[bd.Type]
		if !ok {
			if n, ok = want[bd.Type]; !ok {
				return fmt.Errorf("family %s has no dimension %q (use -provinces 0 / -classes 0)", fam.Name, bd.Type)
			}
		}
		sb := shard.Board{Family: fam.Name, Period: periodID, DimType: bd.Type, DimValue: bd.Value}
		b.shards = append(b.shards, n)
		b.keys = append(b.keys, make([]shard.Keys, n))
		b.zkeys = append(b.zkeys, make([]string, n))
		for i := range n {
			b.keys[bi][i] = layout.Keys(sb, i, n)
			b.zkeys[bi][i] = layout.ZKey(sb, i, n)
		}
		dims = append(dims, sb.Dimension())
	}
	return b.st.RegisterBoards(ctx, b.pk, dims)
}

// Close closes the Redis clients.
func (b *Baseline) Close() { b.close() }

// Card returns the members of a board (Σ ZCARD over its shards).
func (b *Baseline) Card(ctx context.Context, board int) (int64, error) {
	var n int64
	for _, k := range b.zkeys[board] {
		c, err := b.st.Card(ctx, k, false)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// Do runs one operation.
func (b *Baseline) Do(ctx context.Context, op *Op) Outcome {
	s := &b.w.sc.Ops[op.Spec]
	replica := s.Consistency == "replica" && b.replica
	var err error
	var next any
	switch op.Kind {
	case workload.OpEvent, workload.OpBatch:
		err = b.events(ctx, op)
	case workload.OpTop:
		_, err = b.top(ctx, op.Board, s.Limit, replica)
	case workload.OpPage:
		next, err = b.page(ctx, op, s.Limit, replica)
	case workload.OpMember:
		_, err = b.member(ctx, op.Board, b.w.MemberName(op.Users[0]), replica)
	case workload.OpAround:
		_, err = b.around(ctx, op.Board, b.w.MemberName(op.Users[0]), s.Radius, replica)
	case workload.OpLookup:
		_, err = b.lookup(ctx, op, replica)
	}
	if err != nil {
		return Outcome{Class: errClass(err)}
	}
	return Outcome{Next: next}
}

// errStatus is a script answer the gateway would refuse.
type errStatus string

func (e errStatus) Error() string { return string(e) }

// errNotRanked is the baseline's 404 not_ranked.
var errNotRanked = errors.New("404")

func errClass(err error) string {
	var st errStatus
	switch {
	case errors.As(err, &st):
		return string(st)
	case errors.Is(err, errNotRanked):
		return "404"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "redis"
}

// events is the gateway's ApplyBatch minus validation: one INCRBY for the
// achievement numbers (tie first), then every board write of every event in
// one pipelined round trip.
func (b *Baseline) events(ctx context.Context, op *Op) error {
	n := len(op.Users)
	var seq int64
	if b.enc.TakesSeq() {
		first, err := b.st.TakeSeq(ctx, b.pk, int64(n))
		if err != nil {
			return err
		}
		if first+int64(n) > b.enc.SeqCap() {
			return errStatus("range")
		}
		seq = first
	}
	nowMs := time.Now().UnixMilli()
	writes := make([]store.Write, 0, n*(1+len(b.w.dims)))
	var boards []int
	for j, u := range op.Users {
		member := b.w.MemberName(u)
		evID := eventID(op.Prefix, op.Event+uint64(j))
		boards = b.w.MemberBoards(u, boards)
		for _, bi := range boards {
			ns := b.shards[bi]
			w := store.Write{Kind: store.KindApply, Keys: b.keys[bi][shard.Of(member, ns)], Member: member, EventID: evID,
				Mode: b.agg, Value: b.enc.Stored(op.Deltas[j]), B: b.enc.B, MaxPoints: b.enc.MaxPoints, NowMs: nowMs,
				Rules: b.fam.RulesVersion, KeepMetadata: true}
			if b.enc.TakesSeq() {
				w.Seq = seq + int64(j)
			}
			if c := b.enc.Cols; c != nil { // the gateway's columns.lua write
				w.HasCols, w.B, w.Columns = true, c.B, store.ColArgs(c, b.w.ColumnValues(evID), b.agg == "sum")
			}
			writes = append(writes, w)
		}
	}
	for _, r := range b.st.Write(ctx, writes) {
		if r.Err != nil {
			return r.Err
		}
		switch r.Status {
		case store.StatusClosed, store.StatusRange:
			return errStatus(string(r.Status))
		}
	}
	return nil
}

// plan is board's view for the gateway's read plan (internal/readplan).
func (b *Baseline) plan(board int, replica bool) *readplan.Board {
	pb := &readplan.Board{Keys: b.zkeys[board], Replica: replica}
	if b.enc.Cols != nil {
		pb.Cols = make([]string, len(pb.Keys))
		for i, k := range pb.Keys {
			pb.Cols[i] = shard.ColsKey(k)
		}
	}
	return pb
}

func (b *Baseline) entries(items []rank.Item) []rank.Entry {
	out := make([]rank.Entry, len(items))
	for i, it := range items {
		out[i] = rank.Entry{User: it.Member, Points: b.enc.PointsOf(it.Score)}
		if c := b.enc.Cols; c != nil { // the gateway's toEntries
			if user, vals, _, ok := c.Split(it.Member); ok {
				out[i].User, out[i].Columns, out[i].ColKey = user, c.Map(vals), c.Key(it.Member)
			}
		}
	}
	return out
}

func (b *Baseline) top(ctx context.Context, board, limit int, replica bool) ([]rank.Entry, error) {
	r, err := b.rp.SeekAll(ctx, "top", b.plan(board, replica), store.SeekArgs{Mode: store.SeekTop}, limit)
	if err != nil {
		return nil, err
	}
	e := b.entries(r.Items)
	rank.FillRanks(e, 0, 0, b.mode)
	return e, nil
}

// page is a keyset page: limit+1 entries after the cursor (a rank.Item), with
// positions and ranks; it returns the next cursor.
func (b *Baseline) page(ctx context.Context, op *Op, limit int, replica bool) (any, error) {
	a := store.SeekArgs{Mode: store.SeekTop}
	cur, hasCur := op.Cursor.(rank.Item)
	if hasCur {
		a = readplan.MoreThan(b.enc, cur)
		a.Mode, a.Score, a.Member = store.SeekAfter, cur.Score, cur.Member
	}
	r, err := b.rp.SeekAll(ctx, "entries_cursor", b.plan(op.Board, replica), a, limit+1)
	if err != nil {
		return nil, err
	}
	items := r.Items
	var next any
	if len(items) > limit {
		items = items[:limit]
		next = items[limit-1]
	}
	e := b.entries(items)
	moreFirst := r.Start
	if hasCur && len(e) > 0 && e[0].Points == b.enc.PointsOf(cur.Score) && e[0].ColKey == b.entries([]rank.Item{cur})[0].ColKey {
		moreFirst = r.More
	}
	rank.FillRanks(e, r.Start, moreFirst, b.mode)
	return next, nil
}

// home reads a member's score (and stored member) on its own shard.
func (b *Baseline) home(ctx context.Context, board int, user string, replica bool) (rank.Item, error) {
	it, found, err := b.rp.FindOne(ctx, b.plan(board, replica), shard.Of(user, b.shards[board]), user)
	if err != nil {
		return rank.Item{}, err
	}
	if !found {
		return rank.Item{}, errNotRanked
	}
	return it, nil
}

// member: score on the home shard, then position probes on every shard.
func (b *Baseline) member(ctx context.Context, board int, user string, replica bool) (rank.Entry, error) {
	it, err := b.home(ctx, board, user, replica)
	if err != nil {
		return rank.Entry{}, err
	}
	st, _, err := b.rp.Probe(ctx, "member", b.plan(board, replica), b.enc, []rank.Item{it})
	if err != nil {
		return rank.Entry{}, err
	}
	return rank.Entry{User: user, Points: b.enc.PointsOf(it.Score), Position: st.Ahead[0], Rank: st.RankOf(b.mode, 0)}, nil
}

// around: the member's score, then a seek up and a seek down on every shard,
// merged, plus a count of better members when the window starts above the
// member's points (competition ranks).
func (b *Baseline) around(ctx context.Context, board int, user string, radius int, replica bool) ([]rank.Entry, error) {
	it, err := b.home(ctx, board, user, replica)
	if err != nil {
		return nil, err
	}
	pb := b.plan(board, replica)
	w, err := b.rp.Around(ctx, "around", pb, b.enc, it.Score, it.Member, radius, b.mode == rank.Competition)
	if err != nil {
		return nil, err
	}
	e := b.entries(w.Items)
	same := func(x, y rank.Entry) bool { return x.Points == y.Points && x.ColKey == y.ColKey }
	moreFirst := w.More
	switch {
	case b.mode != rank.Competition || same(e[0], e[w.Up]):
	case w.Prev == nil || !same(b.entries([]rank.Item{*w.Prev})[0], e[0]):
		moreFirst = w.First // the window starts its standing: every member ahead is strictly better
	case b.enc.Cols != nil: // strictly better on (points, columns): a probe
		st, _, err := b.rp.Probe(ctx, "around_more", pb, b.enc, w.Items[:1])
		if err != nil {
			return nil, err
		}
		moreFirst = st.More[0]
	default:
		lo := b.enc.MinScoreAbove(b.enc.PointsOf(w.Items[0].Score))
		if moreFirst, _, err = b.rp.Count(ctx, "count", pb, lo, rank.MaxSafe); err != nil {
			return nil, err
		}
	}
	rank.FillRanks(e, w.First, moreFirst, b.mode)
	return e, nil
}

// lookup: ZMSCORE per shard for the members that hash there, then position
// probes on every shard.
func (b *Baseline) lookup(ctx context.Context, op *Op, replica bool) ([]rank.Entry, error) {
	n := b.shards[op.Board]
	seen := map[string]bool{}
	byShard := make([][]string, n)
	for _, u := range op.Users {
		m := b.w.MemberName(u)
		if seen[m] {
			continue
		}
		seen[m] = true
		i := shard.Of(m, n)
		byShard[i] = append(byShard[i], m)
	}
	pb := b.plan(op.Board, replica)
	its, found, _, err := b.rp.Find(ctx, "lookup_scores", pb, byShard)
	if err != nil {
		return nil, err
	}
	items := readplan.FoundItems(byShard, its, found)
	if len(items) == 0 {
		return nil, nil
	}
	sort.Slice(items, func(x, y int) bool { return rank.Before(items[x], items[y]) })
	st, _, err := b.rp.Probe(ctx, "lookup", pb, b.enc, items)
	if err != nil {
		return nil, err
	}
	e := b.entries(items)
	for j := range e {
		e[j].Position = st.Ahead[j]
		e[j].Rank = st.RankOf(b.mode, j)
	}
	return e, nil
}

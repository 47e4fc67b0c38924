// Package gateway is rankgate's orchestration: it resolves boards, fans
// per-shard reads out and merges them exactly, plans pipelined writes, and
// applies the period rules. It knows no net/http (internal/httpapi does) and
// builds no keys (internal/shard does).
//
// It imports internal/store, shard, merge, cache, config, period, rank and
// ledger; it must not import net/http, internal/httpapi or go-redis: Redis
// stays inside internal/store, which answers typed results (store.LateEvent),
// typed script statuses (store.WriteStatus) and sentinel errors
// (store.ErrOOM, store.ErrNotReplicated).
package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/rankgate/rankgate/internal/cache"
	"github.com/rankgate/rankgate/internal/competition"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/indexfeed"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// The Redis work the gateway needs, split by the part of the gateway that
// consumes it (the way io keeps Reader and Writer apart): a decorator or a
// fake implements only the part it changes. *store.Store implements all of
// them; Backend is their union, what New takes.

// WriteBackend carries the write path: event and projection scripts, tie
// sequence numbers, the review stream for refused events, profiles.
type WriteBackend interface {
	Write(ctx context.Context, ws []store.Write) []store.WriteResult
	TakeSeq(ctx context.Context, pk shard.PeriodKeys, n int64) (int64, error)
	RecordLate(ctx context.Context, pk shard.PeriodKeys, e store.LateEvent) (string, error)
	PutProfile(ctx context.Context, key string, fields map[string]string) error
}

// ReadBackend carries the read path: every fan-out goes through the read
// plan (readplan.Backend: one pipeline per node), plus profiles and the
// shared cache level (families with cache_shared).
type ReadBackend interface {
	readplan.Backend
	Profiles(ctx context.Context, keys []string, replica bool) ([]map[string]string, error)
	SharedGet(ctx context.Context, key string) ([]byte, bool, error)
	SharedSet(ctx context.Context, key string, val []byte, ttl time.Duration) error
	SharedLease(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	SharedRelease(ctx context.Context, key string) error
	SharedPurge(ctx context.Context, prefix string) (int64, error)
}

// LifecycleBackend carries periods and boards: period state, freezing,
// expiry, derived boards, snapshots, settlement scores, rebuilds, the review
// stream, and the layout report (cardinality, memory, slots).
type LifecycleBackend interface {
	EnsurePeriod(ctx context.Context, pk shard.PeriodKeys, shards map[string]int, rules string, nowMs int64) (store.PeriodState, error)
	Period(ctx context.Context, pk shard.PeriodKeys) (store.PeriodState, error)
	RegisterBoards(ctx context.Context, pk shard.PeriodKeys, dims []string) error
	Boards(ctx context.Context, pk shard.PeriodKeys) ([]string, error)
	SetStates(ctx context.Context, metas []string, state string) error
	Expire(ctx context.Context, keys []string, ttl time.Duration) error
	Derive(ctx context.Context, dst string, inputs []string, weights []int64, aggregate string, feedLen int64) (int64, error)
	Snapshot(ctx context.Context, src, dst, marker string, depth int, ttl time.Duration) (int64, error)
	Scores(ctx context.Context, key string, members []string, replica bool) ([]int64, []bool, error)
	Rebuild(ctx context.Context, k shard.Keys, entries []store.RebuildEntry, feedLen int64) (int64, error)
	ShardMembers(ctx context.Context, key string, cursor uint64, count int64) ([]string, []int64, uint64, error)
	LateEvents(ctx context.Context, pk shard.PeriodKeys, count int64) ([]store.LateEvent, error)
	Card(ctx context.Context, key string, replica bool) (int64, error)
	MemoryUsage(ctx context.Context, key string) (int64, error)
	Slots(ctx context.Context) ([]store.SlotRange, error)
}

// BanBackend keeps the member bans (bans.go): the write path polls the
// version, the admin calls change them.
type BanBackend interface {
	PutBan(ctx context.Context, k shard.BanKeys, member string, val []byte) (int64, error)
	DeleteBan(ctx context.Context, k shard.BanKeys, member string) ([]byte, bool, error)
	Bans(ctx context.Context, k shard.BanKeys) (map[string]string, int64, error)
	BanVersion(ctx context.Context, k shard.BanKeys) (int64, error)
}

// IndexBackend feeds the read index (internal/indexfeed): feed positions,
// scans and feed reads in per-node pipelines.
type IndexBackend interface {
	indexfeed.Backend
}

// HealthBackend answers readiness and whether replicas can serve reads.
type HealthBackend interface {
	Ready(ctx context.Context) error
	HasReplica() bool
}

// Backend is every part at once; tests substitute fakes that fail or block on
// cue by embedding a real one.
type Backend interface {
	WriteBackend
	ReadBackend
	LifecycleBackend
	HealthBackend
	BanBackend
	IndexBackend
	TournamentBackend
	EraseBackend
	LeagueBackend
}

var _ Backend = (*store.Store)(nil)

// MaxFuture is how far ahead of now an event's `at` may lie.
const MaxFuture = 5 * time.Minute

// Options configure a Service.
type Options struct {
	Config     *config.Config
	Backend    Backend
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
	// ShardTimeout bounds each node's round trip of a fan-out (default 1s).
	ShardTimeout time.Duration
	// CacheSize bounds the read cache (entries); 0 means cache.DefaultSize.
	CacheSize int
	// CacheServeStale serves a cached answer past cache_ttl (up to 2 ×
	// cache_ttl, with its own older as_of) while one background refresh
	// replaces it, in the local cache and, under cache_shared, the shared
	// level: no read of a hot answer waits for its refresh. cmd/gateway
	// turns it on; off, a read at expiry waits for the fan-out.
	CacheServeStale bool
	// Ledger turns on ledger mode (nil: Redis-only mode).
	Ledger Ledger
	// AfterLedgerCommit, a test hook, runs between the ledger commit and the
	// Redis projection of each event; an error plays a crash there.
	AfterLedgerCommit func(eventID string) error
}

// family is a configured family with what the hot path derives from it.
type family struct {
	cfg  *config.Family
	enc  rank.Encoding
	spec period.Spec
	mode rank.RankMode
	agg  string // sum | gt | lt in stored space
	// feedLen > 0: the family keeps a read index, and every write of its
	// board shards appends to the shard's change feed (index.feed_len).
	feedLen int64
	// tour: the family is a tournament (created at run time); nil for a
	// configured family.
	tour *competition.Tournament
}

// Service implements every API operation.
type Service struct {
	cfg *config.Config
	// The backend, one view per consumer (see Backend).
	writeBE  WriteBackend
	readBE   ReadBackend
	lifeBE   LifecycleBackend
	healthBE HealthBackend
	banBE    BanBackend
	tourBE   TournamentBackend
	tourReg  TournamentRegistry
	eraseBE  EraseBackend
	leagueBE LeagueBackend
	layout   shard.Layout
	log      *slog.Logger
	now      func() time.Time
	timeout  time.Duration
	families map[string]*family
	m        *metrics
	cache    *cache.Cache[any]
	rp       *readplan.Reader
	// serveStale: Options.CacheServeStale; sharedRefreshLog rate-limits the
	// logs of failed background recomputes of the shared level.
	serveStale       bool
	sharedRefreshLog rateLog
	// replicaReads: consistency=replica really reads replicas.
	replicaReads bool

	ledger      Ledger
	afterCommit func(eventID string) error
	// eraseChunk: board shards per erasure round (eraseChunk; tests lower it).
	eraseChunk int
	// writes is the mode's write strategy; ledgerWrites is set in ledger mode.
	writes       writeStrategy
	ledgerWrites *ledgerWrites

	periods sync.Map  // "family/period" → map[string]int (recorded shard counts)
	states  sync.Map  // "family/period" → cachedState
	boards  sync.Map  // "family/period/dimension" → struct{} (registered in the period's set)
	banned  banCache  // this gateway's copy of the member bans (bans.go)
	tours   tourCache // this gateway's copy of the tournaments (tournaments.go)
	// joinPrep coalesces the cold start of a join storm: one period state
	// read, one period record, one board listing per tournament period.
	joinPrep singleflight.Group
	// joins coalesces concurrent joins of one tournament period into few
	// script calls (joinbatch.go).
	joins *joinBatcher

	// index is the read index of the families with index.enabled (nil when
	// none has it); RunIndex makes it follow.
	index *indexfeed.Index
}

// New builds a Service.
func New(o Options) (*Service, error) {
	if o.Config == nil || o.Backend == nil {
		return nil, errors.New("gateway: config and backend are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ShardTimeout <= 0 {
		o.ShardTimeout = time.Second
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: o.Config, writeBE: o.Backend, readBE: o.Backend, lifeBE: o.Backend, healthBE: o.Backend, banBE: o.Backend, tourBE: o.Backend, eraseBE: o.Backend, leagueBE: o.Backend, layout: shard.Layout{Prefix: o.Config.Redis.Prefix},
		log: o.Logger, now: o.Now, timeout: o.ShardTimeout, families: map[string]*family{}, m: m,
		ledger: o.Ledger, afterCommit: o.AfterLedgerCommit, eraseChunk: eraseChunk,
	}
	s.joins = newJoinBatcher(s.joinMembers)
	s.tourReg = redisRegistry{be: o.Backend, k: s.layout.Tournaments()}
	if o.Ledger != nil {
		s.tourReg = o.Ledger
	}
	s.replicaReads = o.Config.Redis.ReplicaReads && o.Backend.HasReplica()
	s.serveStale = o.CacheServeStale
	s.writes = redisWrites{s}
	if o.Ledger != nil {
		s.ledgerWrites = newLedgerWrites(s, o.Config.Ledger.CommitLinger, o.Config.Ledger.CommitMaxEvents)
		s.writes = s.ledgerWrites
	}
	s.rp = &readplan.Reader{Backend: o.Backend, Timeout: o.ShardTimeout, Obs: fanoutObserver{m}}
	maxTTL := time.Second
	for _, f := range o.Config.Families {
		maxTTL = max(maxTTL, f.CacheTTL)
	}
	if s.cache, err = cache.New[any](cache.Options{Size: o.CacheSize, MaxTTL: maxTTL, Now: o.Now,
		Registerer: o.Registerer, Logger: o.Logger, ServeStale: o.CacheServeStale}); err != nil {
		return nil, err
	}
	for name, f := range o.Config.Families {
		fam := &family{cfg: f, enc: f.Encoding(), spec: f.PeriodSpec(), mode: f.RankMode(), agg: f.StoredMode()}
		if f.Index.Enabled {
			fam.feedLen = o.Config.Index.FeedLen
		}
		if err := fam.spec.Validate(); err != nil {
			return nil, err
		}
		s.families[name] = fam
	}
	if indexed(o.Config) {
		// The index follows Redis in real time: its clock is the wall
		// clock, whatever clock the Service is given (tests move theirs).
		x := o.Config.Index
		if s.index, err = indexfeed.New(indexfeed.Options{Backend: o.Backend, Logger: o.Logger.With("component", "index"),
			Registerer: o.Registerer, MaxBoards: x.MaxBoards, MaxMembers: x.MaxMembers, IdleAfter: x.IdleAfter,
			PollInterval: x.PollInterval, PollIdle: x.PollIdle, FeedLen: x.FeedLen, Families: indexedFamilies(o.Config)}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// indexed reports whether some family keeps a read index.
func indexed(c *config.Config) bool {
	for _, f := range c.Families {
		if f.Index.Enabled {
			return true
		}
	}
	return false
}

// indexedFamilies names the families that keep a read index.
func indexedFamilies(c *config.Config) []string {
	var out []string
	for _, name := range c.FamilyNames {
		if f := c.Families[name]; f != nil && f.Index.Enabled {
			out = append(out, name)
		}
	}
	return out
}

// Ready reports whether Redis can serve.
func (s *Service) Ready(ctx context.Context) error {
	if err := s.healthBE.Ready(ctx); err != nil {
		return err
	}
	if s.ledger != nil {
		if err := s.ledger.Ping(ctx); err != nil {
			return rank.Unavailable(err, "the ledger does not answer")
		}
	}
	return nil
}

func (s *Service) family(name string) (*family, error) {
	if !rank.ValidFamily(name) {
		return nil, rank.Invalid("family", "family must match [a-z0-9_-]{1,32}")
	}
	if f, ok := s.families[name]; ok {
		return f, nil
	}
	f, err := s.lookupTournament(name)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, rank.Errorf(rank.CodeUnknownFamily, "unknown family %q", name)
	}
	return f, nil
}

// board is a resolved board: its family, period and shard count.
type board struct {
	fam    *family
	b      shard.Board
	period period.Period
	n      int
}

func (b *board) name() string { return b.b.String() }

// resolve validates a board reference and finds its shard count.
func (s *Service) resolve(ctx context.Context, ref BoardRef) (*board, error) {
	f, err := s.family(ref.Family)
	if err != nil {
		return nil, err
	}
	p, err := s.periodOf(f, ref.Period)
	if err != nil {
		return nil, err
	}
	t, v, ok := shard.ParseDimension(ref.Dimension)
	if !ok {
		return nil, rank.Invalid("dimension", "dimension must be national or <type>:<value>")
	}
	if t != shard.National {
		if !rank.ValidDimType(t) {
			return nil, rank.Invalid("dimension", "dimension type must match [a-z0-9_]{1,32}")
		}
		if !rank.ValidDimValue(v) {
			return nil, rank.Invalid("dimension", "dimension value must match [A-Za-z0-9_.-]{1,64}")
		}
	}
	if _, ok := f.cfg.Dimensions[t]; !ok {
		return nil, rank.Errorf(rank.CodeUnknownBoard, "family %s has no dimension %q", f.cfg.Name, t)
	}
	b := &board{fam: f, b: f.board(p.ID, t, v), period: p}
	shards, err := s.shardCounts(ctx, f, p.ID)
	if err != nil {
		return nil, err
	}
	b.n = shards[t]
	return b, nil
}

// familyPeriod resolves a family and one of its periods.
func (s *Service) familyPeriod(familyName, periodID string) (*family, period.Period, error) {
	f, err := s.family(familyName)
	if err != nil {
		return nil, period.Period{}, err
	}
	p, err := s.periodOf(f, periodID)
	if err != nil {
		return nil, period.Period{}, err
	}
	return f, p, nil
}

// periodOf resolves "current" or validates a period id.
func (s *Service) periodOf(f *family, id string) (period.Period, error) {
	if id == "current" || id == "" {
		return f.spec.At(s.now()), nil
	}
	p, err := f.spec.Parse(id)
	if err != nil {
		return period.Period{}, rank.Invalid("period", "%v", err)
	}
	return p, nil
}

// shardCounts returns the shard count of every dimension type of a family
// period: as recorded at its first write, else as configured now.
func (s *Service) shardCounts(ctx context.Context, f *family, periodID string) (map[string]int, error) {
	key := f.cfg.Name + "/" + periodID
	if v, ok := s.periods.Load(key); ok {
		return v.(map[string]int), nil
	}
	st, err := s.lifeBE.Period(ctx, s.layout.Period(f.cfg.Name, periodID))
	if err != nil {
		return nil, rank.Unavailable(err, "reading period %s", key)
	}
	return s.mergeShards(key, f, st), nil
}

// mergeShards fills configured counts for types the period has not recorded,
// and caches the result once the period exists.
func (s *Service) mergeShards(key string, f *family, st store.PeriodState) map[string]int {
	out := make(map[string]int, len(f.cfg.Dimensions))
	complete := st.Exists
	for t, d := range f.cfg.Dimensions {
		if n, ok := st.Shards[t]; ok {
			out[t] = n
		} else {
			out[t] = d.Shards
			complete = false
		}
	}
	if complete {
		s.periods.Store(key, out)
	}
	return out
}

// ensurePeriod records the period's shard counts at its first write.
func (s *Service) ensurePeriod(ctx context.Context, f *family, periodID string) (map[string]int, error) {
	key := f.cfg.Name + "/" + periodID
	if v, ok := s.periods.Load(key); ok {
		return v.(map[string]int), nil
	}
	want := make(map[string]int, len(f.cfg.Dimensions))
	for t, d := range f.cfg.Dimensions {
		want[t] = d.Shards
	}
	st, err := s.lifeBE.EnsurePeriod(ctx, s.layout.Period(f.cfg.Name, periodID), want, f.cfg.RulesVersion, s.now().UnixMilli())
	if err != nil {
		return nil, writeUnavailable(err, "recording period %s", key)
	}
	return s.mergeShards(key, f, st), nil
}

// board names one of the family's boards (with its key group).
func (f *family) board(periodID, dimType, dimValue string) shard.Board {
	b := shard.Board{Family: f.cfg.Name, Period: periodID, DimType: dimType, DimValue: dimValue}
	if f.cfg.KeyGroup != f.cfg.Name {
		b.Group = f.cfg.KeyGroup
	}
	return b
}

// closedAt reports whether writes to p are refused at now by time: past its
// end plus the family's grace window.
func (f *family) closedAt(p period.Period, now time.Time) bool {
	return !p.End.IsZero() && !now.Before(p.End.Add(f.cfg.Grace))
}

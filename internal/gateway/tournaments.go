package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// Tournaments: families created at run time. The registry lives in Redis
// in Redis-only mode (a hash of definitions, a zset of the active ones and a
// version counter under the tag {tournaments}) and in the ledger's table
// tournaments in ledger mode; every gateway keeps a copy and checks the
// version at most tourPoll after its last check when it resolves a family
// that is not configured, so a tournament created through one gateway is
// known to every gateway within tourPoll (+ one round trip). Should the
// registry not answer, a copy younger than tourStale still serves.
//
// A tournament's board is a family board like any other; its joins and
// attempts live in hashes beside each board shard (shard.JoinsKey,
// AttemptsKey), in both modes: the national board's shard 0 holds every
// seat, so a join is one script against the size bound; a gated write checks
// the join and the attempts in its own shard's slot — in the write's own
// script in Redis-only mode, in one script before the ledger commit in
// ledger mode (ledgerWrites.startChecks: sent as the batch arrives, while it waits in
// the commit queue).
const (
	tourPoll  = 200 * time.Millisecond
	tourStale = 2 * time.Second
)

// TournamentBackend carries the joins and attempts, and the registry of
// Redis-only mode.
type TournamentBackend interface {
	Join(ctx context.Context, seats, meta string, members []string, maxSize, nowMs int64) ([]store.JoinResult, error)
	MarkJoined(ctx context.Context, marks []store.JoinMark, nowMs int64) error
	JoinSize(ctx context.Context, seats string) (int64, error)
	HoldAttempts(ctx context.Context, hs []store.Hold) ([]string, error)
	RestoreAttempts(ctx context.Context, cs []store.AttemptCount) error
	CreateTournament(ctx context.Context, k shard.TournamentKeys, id string, def []byte, activeUntil *int64, nowMs int64, maxActive int) (string, int64, error)
	CancelTournament(ctx context.Context, k shard.TournamentKeys, id string, def []byte) (string, int64, error)
	Tournaments(ctx context.Context, k shard.TournamentKeys) (map[string]string, int64, error)
	TournamentVersion(ctx context.Context, k shard.TournamentKeys) (int64, error)
}

// TournamentRegistry keeps the tournaments' definitions (answers:
// competition.Registry*): Redis in Redis-only mode (redisRegistry), the
// ledger in ledger mode (*ledger.Ledger).
type TournamentRegistry interface {
	CreateTournament(ctx context.Context, id string, def []byte, activeUntil *int64, nowMs int64, maxActive int) (string, int64, error)
	CancelTournament(ctx context.Context, id string, def []byte) (string, int64, error)
	Tournaments(ctx context.Context) (map[string]string, int64, error)
	TournamentVersion(ctx context.Context) (int64, error)
}

// redisRegistry is the registry of Redis-only mode: the backend's, under
// the registry's keys.
type redisRegistry struct {
	be TournamentBackend
	k  shard.TournamentKeys
}

var _ TournamentRegistry = redisRegistry{}

func (r redisRegistry) CreateTournament(ctx context.Context, id string, def []byte, activeUntil *int64, nowMs int64, maxActive int) (string, int64, error) {
	return r.be.CreateTournament(ctx, r.k, id, def, activeUntil, nowMs, maxActive)
}

func (r redisRegistry) CancelTournament(ctx context.Context, id string, def []byte) (string, int64, error) {
	return r.be.CancelTournament(ctx, r.k, id, def)
}

func (r redisRegistry) Tournaments(ctx context.Context) (map[string]string, int64, error) {
	return r.be.Tournaments(ctx, r.k)
}

func (r redisRegistry) TournamentVersion(ctx context.Context) (int64, error) {
	return r.be.TournamentVersion(ctx, r.k)
}

// tourCache is a gateway's copy of the registry, like banCache: an immutable
// snapshot behind an atomic pointer; one caller refreshes it at a time.
type tourCache struct {
	mu   sync.Mutex
	snap atomic.Pointer[tourSnapshot]
}

// tourSnapshot is one copy of the registry; never modified once published.
type tourSnapshot struct {
	version int64
	fams    map[string]*family // id → the tournament's family (tour set)
	raw     map[string]string  // id → its stored JSON (unchanged: family kept)
	checked time.Time
}

func (t *tourSnapshot) fresh(now time.Time) bool {
	return t != nil && !t.checked.IsZero() && now.Sub(t.checked) < tourPoll
}

// tournamentsOn answers an error when tournaments cannot be used here.
func (s *Service) tournamentsOn() error {
	if !s.cfg.Tournaments.Enabled {
		return rank.Errorf(rank.CodeNotFound, "tournaments are turned off (tournaments.enabled: false)")
	}
	return nil
}

// tournamentSnapshot returns the registry copy, refreshed when older than
// tourPoll (force: refreshed now).
func (s *Service) tournamentSnapshot(ctx context.Context, force bool) (*tourSnapshot, error) {
	c := &s.tours
	if cur := c.snap.Load(); !force && cur.fresh(time.Now()) {
		return cur, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	cur := c.snap.Load()
	if !force && cur.fresh(now) {
		return cur, nil
	}
	if cur == nil {
		cur = &tourSnapshot{fams: map[string]*family{}, raw: map[string]string{}}
	}
	v, err := s.tourReg.TournamentVersion(ctx)
	if err == nil && (v != cur.version || cur.checked.IsZero()) {
		var all map[string]string
		if all, v, err = s.tourReg.Tournaments(ctx); err == nil {
			next := &tourSnapshot{version: v, fams: make(map[string]*family, len(all)), raw: all}
			for id, js := range all {
				if old, ok := cur.fams[id]; ok && cur.raw[id] == js {
					next.fams[id] = old
					continue
				}
				f, err := s.tournamentFamily(js)
				if err != nil {
					s.log.Error("unreadable tournament; left out", "tournament", id, "err", err)
					continue
				}
				next.fams[id] = f
			}
			cur = next
		}
	}
	if err != nil {
		if !cur.checked.IsZero() && now.Sub(cur.checked) < tourStale {
			return cur, nil
		}
		return nil, rank.Unavailable(err, "reading the tournaments")
	}
	next := *cur
	next.checked = now
	c.snap.Store(&next)
	return &next, nil
}

// tournamentFamily builds the family of a stored tournament.
func (s *Service) tournamentFamily(js string) (*family, error) {
	t, err := competition.Parse([]byte(js))
	if err != nil {
		return nil, err
	}
	fc, err := t.Family(s.cfg.Tournaments.Defaults)
	if err != nil {
		return nil, err
	}
	fam := &family{cfg: fc, enc: fc.Encoding(), spec: fc.PeriodSpec(), mode: fc.RankMode(), agg: fc.StoredMode(), tour: t}
	if err := fam.spec.Validate(); err != nil {
		return nil, err
	}
	return fam, nil
}

// lookupTournament finds a tournament's family on the registry copy (nil:
// none by that id).
func (s *Service) lookupTournament(name string) (*family, error) {
	if s.tournamentsOn() != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	snap, err := s.tournamentSnapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	return snap.fams[name], nil
}

// tournamentFamilies lists the tournaments' families (the scheduler runs
// their lifecycle), by id; nil when tournaments are off or unreadable.
func (s *Service) tournamentFamilies(ctx context.Context) []*family {
	if s.tournamentsOn() != nil {
		return nil
	}
	snap, err := s.tournamentSnapshot(ctx, false)
	if err != nil {
		s.log.Warn("the tournaments could not be read for the lifecycle", "err", err)
		return nil
	}
	ids := make([]string, 0, len(snap.fams))
	for id := range snap.fams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*family, len(ids))
	for i, id := range ids {
		out[i] = snap.fams[id]
	}
	return out
}

// CreateTournament validates and stores a tournament; every gateway knows it
// within tourPoll.
func (s *Service) CreateTournament(ctx context.Context, t competition.Tournament) (TournamentInfo, error) {
	if err := s.tournamentsOn(); err != nil {
		return TournamentInfo{}, err
	}
	now := s.now()
	t.Created, t.Cancelled = time.Time{}, nil
	if err := t.Normalize(s.cfg.Tournaments.Defaults, now); err != nil {
		return TournamentInfo{}, err
	}
	for name, f := range s.families {
		if name == t.ID || f.cfg.KeyGroup == t.ID {
			return TournamentInfo{}, &rank.Error{Code: rank.CodeAlreadyExists, Field: "id",
				Message: "id " + strconv.Quote(t.ID) + " is a configured family (or key group); pick another"}
		}
	}
	def, err := json.Marshal(t)
	if err != nil {
		return TournamentInfo{}, err
	}
	var until *int64
	if end, ok := t.ActiveUntil(); ok {
		ms := end.UnixMilli()
		until = &ms
	}
	st, n, err := s.tourReg.CreateTournament(ctx, t.ID, def, until, now.UnixMilli(), s.cfg.Tournaments.MaxActive)
	if err != nil {
		return TournamentInfo{}, writeUnavailable(err, "storing tournament %s", t.ID)
	}
	switch st {
	case competition.RegistryCreated:
	case competition.RegistryExists:
		return TournamentInfo{}, &rank.Error{Code: rank.CodeAlreadyExists, Field: "id",
			Message: "a tournament with id " + strconv.Quote(t.ID) + " exists already (ids are never reused)"}
	case competition.RegistryLimit:
		return TournamentInfo{}, &rank.Error{Code: rank.CodeOutOfRange, Field: "id",
			Message: strconv.FormatInt(n, 10) + " tournaments are active, the bound of tournaments.max_active; cancel one or wait for one to end"}
	default:
		return TournamentInfo{}, rank.Unavailable(nil, "unexpected registry answer %q", st)
	}
	s.log.Info("tournament created", "tournament", t.ID, "start", t.Start, "end", t.End, "reset", t.Reset, "max_size", t.MaxSize)
	snap, err := s.tournamentSnapshot(ctx, true)
	if err != nil {
		return TournamentInfo{}, err
	}
	f, ok := snap.fams[t.ID]
	if !ok {
		return TournamentInfo{}, rank.Unavailable(nil, "tournament %s was stored but is not readable", t.ID)
	}
	return s.tournamentInfo(ctx, f, now, true)
}

// joinPeriod is the period a join (or a tournament's answer) names at now:
// the one running, else the next one; ok false when none is left.
func (s *Service) joinPeriod(f *family, now time.Time) (period.Period, bool) {
	t := f.tour
	at := now
	if t.Start != nil && t.Start.After(at) {
		at = *t.Start
	}
	p := f.spec.At(at)
	if !p.End.IsZero() && !now.Before(p.End) {
		if !t.Recurring() {
			return p, false
		}
		if p = f.spec.Next(p); p.ID == "" {
			return p, false
		}
	}
	if t.End != nil && !p.Start.Before(*t.End) {
		return p, false
	}
	return p, true
}

// seatKeys are the seats hash and the meta of a tournament period's national
// board shard 0, and its shard count.
func (s *Service) seatKeys(ctx context.Context, f *family, periodID string, ensure bool) (shard.Board, string, string, int, error) {
	var sc map[string]int
	var err error
	if ensure {
		sc, err = s.ensurePeriod(ctx, f, periodID)
	} else {
		sc, err = s.shardCounts(ctx, f, periodID)
	}
	if err != nil {
		return shard.Board{}, "", "", 0, err
	}
	n := sc[shard.National]
	b := f.board(periodID, shard.National, "")
	k := s.layout.Keys(b, 0, n)
	return b, shard.JoinsKey(k.Z), k.Meta, n, nil
}

func (s *Service) tournamentInfo(ctx context.Context, f *family, now time.Time, withSize bool) (TournamentInfo, error) {
	info := TournamentInfo{Tournament: f.tour.Tournament, Created: f.tour.Created, Cancelled: f.tour.Cancelled, State: f.tour.State(now)}
	p, ok := s.joinPeriod(f, now)
	if !ok { // ended: its last period
		at := now
		if t := f.tour; t.End != nil && at.After(*t.End) {
			at = t.End.Add(-time.Nanosecond)
		}
		p = f.spec.At(at)
	}
	info.Period, info.Starts, info.Ends = p.ID, p.Start.UTC(), p.End.UTC()
	if withSize {
		_, seats, _, _, err := s.seatKeys(ctx, f, p.ID, false)
		if err != nil {
			return TournamentInfo{}, err
		}
		if info.Size, err = s.tourBE.JoinSize(ctx, seats); err != nil {
			return TournamentInfo{}, rank.Unavailable(err, "reading the size of %s", f.cfg.Name)
		}
	}
	return info, nil
}

// tournamentByID resolves a tournament id for the tournament routes.
func (s *Service) tournamentByID(ctx context.Context, id string) (*family, error) {
	if err := s.tournamentsOn(); err != nil {
		return nil, err
	}
	if !rank.ValidFamily(id) {
		return nil, rank.Invalid("id", "id must match [a-z0-9_-]{1,32}")
	}
	snap, err := s.tournamentSnapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	f, ok := snap.fams[id]
	if !ok {
		return nil, rank.Errorf(rank.CodeUnknownTournament, "unknown tournament %q", id)
	}
	return f, nil
}

// Tournament answers GET /v1/tournaments/{id}.
func (s *Service) Tournament(ctx context.Context, id string) (TournamentInfo, error) {
	f, err := s.tournamentByID(ctx, id)
	if err != nil {
		return TournamentInfo{}, err
	}
	return s.tournamentInfo(ctx, f, s.now(), true)
}

// Tournaments answers GET /v1/tournaments?state=…, by id.
func (s *Service) Tournaments(ctx context.Context, state string) (TournamentList, error) {
	if err := s.tournamentsOn(); err != nil {
		return TournamentList{}, err
	}
	switch state {
	case "", competition.StateUpcoming, competition.StateActive, competition.StateEnded, competition.StateCancelled:
	default:
		return TournamentList{}, rank.Invalid("state", "state must be upcoming, active, ended or cancelled")
	}
	snap, err := s.tournamentSnapshot(ctx, false)
	if err != nil {
		return TournamentList{}, err
	}
	now := s.now()
	out := TournamentList{Tournaments: []TournamentInfo{}}
	for _, f := range snap.fams {
		if state != "" && f.tour.State(now) != state {
			continue
		}
		info, err := s.tournamentInfo(ctx, f, now, true)
		if err != nil {
			return TournamentList{}, err
		}
		out.Tournaments = append(out.Tournaments, info)
	}
	slices.SortFunc(out.Tournaments, func(a, b TournamentInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}

// CancelTournament (DELETE /v1/tournaments/{id}) stops joins and events:
// the tournament is marked cancelled (every gateway within tourPoll) and its
// running period frozen (writes refused atomically at once). Idempotent.
func (s *Service) CancelTournament(ctx context.Context, id string) (TournamentInfo, error) {
	f, err := s.tournamentByID(ctx, id)
	if err != nil {
		return TournamentInfo{}, err
	}
	now := s.now()
	if f.tour.Cancelled == nil {
		t := *f.tour
		at := now.UTC()
		t.Cancelled = &at
		def, err := json.Marshal(t)
		if err != nil {
			return TournamentInfo{}, err
		}
		st, _, err := s.tourReg.CancelTournament(ctx, id, def)
		if err != nil {
			return TournamentInfo{}, writeUnavailable(err, "cancelling tournament %s", id)
		}
		if st != competition.RegistryCancelled {
			return TournamentInfo{}, rank.Errorf(rank.CodeUnknownTournament, "unknown tournament %q", id)
		}
		s.log.Info("tournament cancelled", "tournament", id)
		snap, err := s.tournamentSnapshot(ctx, true)
		if err != nil {
			return TournamentInfo{}, err
		}
		if nf, ok := snap.fams[id]; ok {
			f = nf
		}
	}
	// Freeze the period running now (a period nobody wrote to has nothing
	// to freeze; the cancelled mark refuses its writes).
	if p, ok := s.joinPeriod(f, now); ok && !now.Before(p.Start) {
		if ps, err := s.lifeBE.Period(ctx, s.layout.Period(id, p.ID)); err == nil && ps.Exists {
			if _, err := s.Freeze(ctx, id, p.ID); err != nil {
				return TournamentInfo{}, err
			}
		}
	}
	return s.tournamentInfo(ctx, f, now, true)
}

// Join (POST /v1/tournaments/{id}/join) seats a member in the tournament's
// running (or next) period: atomically against max_size.
func (s *Service) Join(ctx context.Context, id, user string) (JoinResult, error) {
	f, err := s.tournamentByID(ctx, id)
	if err != nil {
		return JoinResult{}, err
	}
	if !rank.ValidMember(user) {
		return JoinResult{}, rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}")
	}
	t := f.tour
	if t.Cancelled != nil {
		return JoinResult{}, rank.Errorf(rank.CodePeriodClosed, "tournament %s was cancelled", id)
	}
	now := s.now()
	p, ok := s.joinPeriod(f, now)
	if !ok {
		return JoinResult{}, rank.Errorf(rank.CodePeriodClosed, "tournament %s has ended", id)
	}
	// The period's state, shard counts and board listing: read (or made)
	// once for a storm of joins at a tournament's start, then cached.
	v, err, _ := s.joinPrep.Do(id+"/"+p.ID, func() (any, error) {
		if st, err := s.periodState(ctx, f, p.ID); err != nil {
			return nil, err
		} else if st != "" && st != "open" {
			return nil, rank.Errorf(rank.CodePeriodClosed, "period %s of tournament %s is %s", p.ID, id, st)
		}
		var k joinKeys
		var err error
		if k.b, k.seats, k.meta, k.n, err = s.seatKeys(ctx, f, p.ID, true); err != nil {
			return nil, err
		}
		key := id + "/" + p.ID + "/" + shard.National
		if _, seen := s.boards.Load(key); !seen {
			if err := s.lifeBE.RegisterBoards(ctx, s.layout.Period(id, p.ID), []string{shard.National}); err == nil {
				s.boards.Store(key, struct{}{})
			}
		}
		return k, nil
	})
	if err != nil {
		return JoinResult{}, err
	}
	k := v.(joinKeys)
	var maxSize int64
	if t.MaxSize != nil {
		maxSize = *t.MaxSize
	}
	r, err := s.joins.join(ctx, k, user, maxSize, now.UnixMilli())
	if err != nil {
		return JoinResult{}, writeUnavailable(err, "joining %s", id)
	}
	switch r.Status {
	case store.JoinFull:
		return JoinResult{}, rank.Errorf(rank.CodeTournamentFull, "tournament %s is full (%d of %d)", id, r.Size, maxSize)
	case store.JoinClosed:
		return JoinResult{}, rank.Errorf(rank.CodePeriodClosed, "period %s of tournament %s is closed", p.ID, id)
	}
	return JoinResult{Joined: r.Status == store.JoinJoined, Size: r.Size, Period: p.ID}, nil
}

// joinMembers seats members (a batch of concurrent joins, joinBatcher) on
// the tournament period of k: each member's board index learns the seats
// shard and the member's own shard first (one pipeline for the batch), so an
// erasure finds a join even without an event; then one join script call;
// then, on a board of several shards, every member in (new or not: a
// retried join repairs a mark a failure left out) is marked joined on their
// own shard, where their gated writes check it (one pipeline); in ledger
// mode the ledger records the seats (one statement). When the index, the
// seats and the marks took store.DefaultIndexWindow or more, the index
// learns them once more (an erasure that took the index meanwhile may have
// erased before the seat was taken).
func (s *Service) joinMembers(ctx context.Context, k joinKeys, members []string, maxSize, nowMs int64) ([]store.JoinResult, error) {
	idx := make(map[string][]string, len(members))
	seat := s.layout.ZKey(k.b, 0, k.n)
	for _, m := range members {
		zs := []string{seat}
		if i := shard.Of(m, k.n); i != 0 {
			zs = append(zs, s.layout.ZKey(k.b, i, k.n))
		}
		idx[s.layout.MemberBoards(m)] = zs
	}
	sent := time.Now()
	if err := s.eraseBE.IndexMemberBoards(ctx, idx); err != nil {
		return nil, err
	}
	rs, err := s.tourBE.Join(ctx, k.seats, k.meta, members, maxSize, nowMs)
	if err != nil {
		return nil, err
	}
	var marks []store.JoinMark
	var in []string
	for i, m := range members {
		if rs[i].Status != store.JoinJoined && rs[i].Status != store.JoinIn {
			continue
		}
		in = append(in, m)
		if j := shard.Of(m, k.n); j != 0 {
			marks = append(marks, store.JoinMark{Joins: shard.JoinsKey(s.layout.ZKey(k.b, j, k.n)), Member: m})
		}
	}
	// A failure of any: a retried join answers "in" and does them again.
	if err := s.tourBE.MarkJoined(ctx, marks, nowMs); err != nil {
		return nil, err
	}
	if time.Since(sent) >= store.DefaultIndexWindow {
		// Slower than an erasure's wait after taking the index: index
		// again, after the seats are taken (see store.Write.Index).
		if err := s.eraseBE.IndexMemberBoards(ctx, idx); err != nil {
			return nil, err
		}
	}
	if s.ledger != nil {
		if err := s.ledger.RecordJoins(ctx, k.b.Family, k.b.Period, in); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// joinKeys are what a join of one tournament period needs besides the
// member: its national board, seats hash, shard 0 meta and shard count.
type joinKeys struct {
	b           shard.Board
	seats, meta string
	n           int
}

// tourGate is the gate of a tournament's writes on one board shard (nil:
// the tournament checks nothing per member).
func tourGate(f *family, z string) *store.Gate {
	t := f.tour
	if t == nil || (!t.JoinRequired && t.MaxAttempts == nil) {
		return nil
	}
	g := &store.Gate{Joins: shard.JoinsKey(z), Attempts: shard.AttemptsKey(z), JoinRequired: t.JoinRequired}
	if t.MaxAttempts != nil {
		g.MaxAttempts = *t.MaxAttempts
	}
	return g
}

// tourClosed refuses an event of a tournament at `at` outside its bounds
// (cancelled, before its start, after its series end); "" when it may run.
func tourClosed(f *family, at time.Time) string {
	t := f.tour
	switch {
	case t == nil:
		return ""
	case t.Cancelled != nil:
		return "tournament " + t.ID + " was cancelled"
	case t.Start != nil && at.Before(*t.Start):
		return "tournament " + t.ID + " starts at " + t.Start.UTC().Format(time.RFC3339)
	case t.End != nil && !at.Before(*t.End):
		return "tournament " + t.ID + " ended at " + t.End.UTC().Format(time.RFC3339)
	}
	return ""
}

// notJoined refuses a gated event of a member who has not joined.
func notJoined(p *plan) error {
	return rank.Errorf(rank.CodeNotJoined, "member %s has not joined tournament %s (POST /v1/tournaments/%s/join)",
		p.ev.User, p.fam.cfg.Name, p.fam.cfg.Name)
}

// attemptsExhausted refuses a gated event of a member who used every attempt.
func attemptsExhausted(p *plan) error {
	return rank.Errorf(rank.CodeAttemptsExhausted, "member %s has used all %d attempts in period %s of tournament %s",
		p.ev.User, *p.fam.tour.MaxAttempts, p.period.ID, p.fam.cfg.Name)
}

// restoreSeats gives a rebuilt tournament board what the ledger keeps of its
// seats: every joined member in the seats hash and on their own shard, and,
// with max_attempts, each member's attempt count (their award events) where
// Redis has none. Marks and counts Redis still holds stay.
func (s *Service) restoreSeats(ctx context.Context, b *board) error {
	joined, attempts, err := s.ledger.Seats(ctx, b.fam.cfg.Name, b.period.ID)
	if err != nil {
		return ledgerErr(err)
	}
	zkey := func(m string) string { return s.layout.ZKey(b.b, shard.Of(m, b.n), b.n) }
	seats := shard.JoinsKey(s.layout.ZKey(b.b, 0, b.n))
	marks := make([]store.JoinMark, 0, 2*len(joined))
	for _, m := range joined {
		marks = append(marks, store.JoinMark{Joins: seats, Member: m})
		if own := shard.JoinsKey(zkey(m)); own != seats {
			marks = append(marks, store.JoinMark{Joins: own, Member: m})
		}
	}
	var counts []store.AttemptCount
	if b.fam.tour.MaxAttempts != nil {
		for m, n := range attempts {
			counts = append(counts, store.AttemptCount{Attempts: shard.AttemptsKey(zkey(m)), Member: m, N: n})
		}
	}
	if err := s.tourBE.MarkJoined(ctx, marks, s.now().UnixMilli()); err != nil {
		return rank.Unavailable(err, "restoring the seats of %s; retry (rebuild is idempotent)", b.name())
	}
	if err := s.tourBE.RestoreAttempts(ctx, counts); err != nil {
		return rank.Unavailable(err, "restoring the attempts of %s; retry (rebuild is idempotent)", b.name())
	}
	s.log.Info("rebuild: seats restored", "board", b.name(), "joined", len(joined), "attempt_counts", len(counts))
	return nil
}

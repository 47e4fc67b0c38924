package gateway

import (
	"context"
	"errors"
	"fmt"
	"github.com/rankgate/rankgate/api/wire"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testpg"
)

// tourFamilies: one configured family beside the tournaments (the yardstick
// and the id clash).
const tourFamilies = `  weekly:
    period: week
    timezone: UTC
    key_group: wk_group
    dimensions:
      national: {shards: 1}
`

// running is a one-shot tournament that started a minute ago and runs an
// hour more.
// tourMode is one mode a tournament test runs in: Redis-only, or ledger
// mode (the registry in PostgreSQL, the checks before the ledger commit).
type tourMode struct {
	ledger bool
	schema string // ledger mode: every gateway of the test uses this schema
}

// service is a gateway of the mode with the tournament test families.
func (m tourMode) service(t *testing.T, adjust func(*Options, *store.Store)) *Service {
	t.Helper()
	var l *ledger.Ledger
	if m.ledger {
		var err error
		if l, err = ledger.Open(context.Background(), testpg.DSN(t), ledger.Options{Schema: m.schema, MaxConns: 4}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
	}
	return newClusterServiceWith(t, tourFamilies, func(o *Options, s *store.Store) {
		if l != nil {
			o.Ledger = l
		}
		if adjust != nil {
			adjust(o, s)
		}
	})
}

// tourModes runs a tournament test in both modes.
func tourModes(t *testing.T, run func(t *testing.T, m tourMode)) {
	for _, mode := range []string{"redis-only", "ledger"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			m := tourMode{ledger: mode == "ledger"}
			if m.ledger {
				m.schema = testpg.Schema(t)
			}
			run(t, m)
		})
	}
}

func running(id string, now time.Time) competition.Tournament {
	start, end := now.Add(-time.Minute).UTC(), now.Add(time.Hour).UTC()
	return competition.Tournament{Tournament: wire.Tournament{ID: id, Start: &start, End: &end}}
}

func mustCreate(t testing.TB, svc *Service, tr competition.Tournament) TournamentInfo {
	t.Helper()
	info, err := svc.CreateTournament(ctxT(t, 10*time.Second), tr)
	if err != nil {
		t.Fatalf("CreateTournament(%s): %v", tr.ID, err)
	}
	return info
}

// TestTournamentJoinStorm: 1000 concurrent joins for max_size 100 on a board
// of 4 shards: exactly 100 get in, 900 are refused tournament_full, and the
// seats agree with the size on every gateway read.
func TestTournamentJoinStorm(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		svc := m.service(t, nil)
		tr := running("storm", time.Now())
		tr.MaxSize, tr.Shards, tr.JoinRequired = ptr(int64(100)), ptr(4), true
		mustCreate(t, svc, tr)
		ctx := ctxT(t, 60*time.Second)
		const n = 1000
		var wg sync.WaitGroup
		errs := make([]error, n)
		joined := make([]bool, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				r, err := svc.Join(ctx, "storm", fmt.Sprintf("u%04d", i))
				errs[i], joined[i] = err, r.Joined
			})
		}
		close(start)
		wg.Wait()
		in, full := 0, 0
		for i := range n {
			switch {
			case errs[i] == nil && joined[i]:
				in++
			case rank.CodeOf(errs[i]) == rank.CodeTournamentFull:
				full++
			default:
				t.Errorf("join %d: joined %v, %v", i, joined[i], errs[i])
			}
		}
		if in != 100 || full != 900 {
			t.Fatalf("%d joined, %d full; want exactly 100 and 900", in, full)
		}
		info, err := svc.Tournament(ctx, "storm")
		if err != nil || info.Size != 100 {
			t.Fatalf("size %d, %v; want 100", info.Size, err)
		}
		// Every member who got in can write (its own shard knows the join), and
		// one who did not cannot.
		for i := range n {
			ev := sumEv(fmt.Sprintf("e%d", i), "storm", fmt.Sprintf("u%04d", i), 1, nil)
			_, err := svc.ApplyEvent(ctx, ev)
			switch {
			case joined[i] && err != nil:
				t.Fatalf("member %d joined but its event failed: %v", i, err)
			case !joined[i] && rank.CodeOf(err) != rank.CodeNotJoined:
				t.Fatalf("member %d did not join; its event answered %v, want not_joined", i, err)
			}
		}
		// Joining again is no new seat.
		var again string
		for i := range n {
			if joined[i] {
				again = fmt.Sprintf("u%04d", i)
				break
			}
		}
		if r, err := svc.Join(ctx, "storm", again); err != nil || r.Joined || r.Size != 100 {
			t.Errorf("second join of %s: %+v, %v; want joined false, size 100", again, r, err)
		}
	})
}

// TestTournamentAttempts: concurrent events of one member never count more
// than max_attempts; a replay of an accepted event is a duplicate, not an
// attempt; a refused event changes nothing.
func TestTournamentAttempts(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		svc := m.service(t, nil)
		tr := running("tries", time.Now())
		tr.MaxAttempts, tr.JoinRequired, tr.Aggregate, tr.Shards = ptr(int64(3)), true, "max", ptr(2)
		mustCreate(t, svc, tr)
		ctx := ctxT(t, 30*time.Second)
		if _, err := svc.ApplyEvent(ctx, valEv("x0", "tries", "alice", 10, nil)); rank.CodeOf(err) != rank.CodeNotJoined {
			t.Fatalf("event before the join: %v, want not_joined", err)
		}
		for _, u := range []string{"alice", "bob"} {
			if _, err := svc.Join(ctx, "tries", u); err != nil {
				t.Fatal(err)
			}
		}
		const n = 40
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = svc.ApplyEvent(ctx, valEv(fmt.Sprintf("a%d", i), "tries", "alice", int64(100+i), nil))
			})
		}
		wg.Wait()
		var ok []int
		for i, err := range errs {
			switch rank.CodeOf(err) {
			case "":
				ok = append(ok, i)
			case rank.CodeAttemptsExhausted:
			default:
				t.Fatalf("event %d: %v", i, err)
			}
		}
		if len(ok) != 3 {
			t.Fatalf("%d events of one member accepted concurrently, want exactly max_attempts 3", len(ok))
		}
		// A replay of an accepted event is a duplicate (not an attempt, not a
		// refusal).
		res, err := svc.ApplyEvent(ctx, valEv(fmt.Sprintf("a%d", ok[0]), "tries", "alice", int64(100+ok[0]), nil))
		if err != nil || !res.Duplicate {
			t.Fatalf("replay: %+v, %v; want a duplicate", res, err)
		}
		// The board holds the best of the three accepted values.
		best := int64(0)
		for _, i := range ok {
			best = max(best, int64(100+i))
		}
		p := svc.familyPeriodOf(t, "tries")
		wantTop(t, svc, nationalRef("tries", p), []userPts{{"alice", best}})
		if m.ledger { // the ledger holds the accepted events' total
			if lt, err := svc.ledger.Total(ctx, "tries", p, "national", "alice"); err != nil || lt.Points != best {
				t.Fatalf("ledger total of alice: %+v, %v; want %d", lt, err, best)
			}
		}
		// Another member's attempts are its own; a value that does not improve
		// still counts (it was an accepted attempt).
		for i, v := range []int64{50, 40, 30} {
			if _, err := svc.ApplyEvent(ctx, valEv(fmt.Sprintf("b%d", i), "tries", "bob", v, nil)); err != nil {
				t.Fatalf("bob %d: %v", i, err)
			}
		}
		if _, err := svc.ApplyEvent(ctx, valEv("b9", "tries", "bob", 99, nil)); rank.CodeOf(err) != rank.CodeAttemptsExhausted {
			t.Fatalf("bob's fourth: %v, want attempts_exhausted", err)
		}
		wantTop(t, svc, nationalRef("tries", p), []userPts{{"alice", best}, {"bob", 50}})
	})
}

// familyPeriodOf is the current period of a family.
func (s *Service) familyPeriodOf(t *testing.T, name string) string {
	t.Helper()
	f, err := s.family(name)
	if err != nil {
		t.Fatal(err)
	}
	return f.spec.At(s.now()).ID
}

// TestTournamentThreeGateways: created through one gateway, joined and
// written through a second, read through a third — each within a second.
func TestTournamentThreeGateways(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		// Three gateways: each its own Service and Redis client, one key prefix.
		// In ledger mode each has its own connection pool to one ledger.
		var prefix string
		g1 := m.service(t, func(o *Options, _ *store.Store) { prefix = o.Config.Redis.Prefix })
		same := func(o *Options, _ *store.Store) { o.Config.Redis.Prefix = prefix }
		g2 := m.service(t, same)
		g3 := m.service(t, same)
		ctx := ctxT(t, 30*time.Second)
		// The others have looked before it exists (their copy is the empty one).
		for _, g := range []*Service{g2, g3} {
			if _, err := g.Tournament(ctx, "cup3"); rank.CodeOf(err) != rank.CodeUnknownTournament {
				t.Fatalf("before creation: %v", err)
			}
		}
		tr := running("cup3", time.Now())
		tr.JoinRequired, tr.MaxSize = true, ptr(int64(10))
		mustCreate(t, g1, tr)
		created := time.Now()
		var joinedAt time.Time
		soon.Eventually(t, time.Second, func() error {
			if _, err := g2.Join(ctx, "cup3", "u1"); err != nil {
				return err
			}
			joinedAt = time.Now()
			return nil
		})
		mustApplyEvent(t, g2, sumEv("e1", "cup3", "u1", 7, nil))
		soon.Eventually(t, time.Second, func() error {
			page, err := g3.Top(ctx, nationalRef("cup3", "current"), 10, primaryRead)
			if err != nil {
				return err
			}
			if len(page.Entries) != 1 || page.Entries[0].User != "u1" || page.Entries[0].Points != 7 {
				return fmt.Errorf("top %+v", page.Entries)
			}
			return nil
		})
		t.Logf("known through a second gateway %s after creation, read through a third %s after", joinedAt.Sub(created), time.Since(created))
		// Cancelled through the third: the second refuses within a second.
		if _, err := g3.CancelTournament(ctx, "cup3"); err != nil {
			t.Fatal(err)
		}
		soon.Eventually(t, time.Second, func() error {
			_, err := g2.ApplyEvent(ctx, sumEv(fmt.Sprintf("c%d", time.Now().UnixNano()), "cup3", "u1", 1, nil))
			if rank.CodeOf(err) != rank.CodePeriodClosed {
				return fmt.Errorf("event after cancel: %v", err)
			}
			return nil
		})
		if _, err := g1.Join(ctx, "cup3", "u2"); rank.CodeOf(err) != rank.CodePeriodClosed {
			t.Fatalf("join after cancel: %v, want period_closed", err)
		}
		// The board stays readable.
		wantTop(t, g1, nationalRef("cup3", "current"), []userPts{{"u1", 7}})
	})
}

// TestTournamentRegistry: ids clash with families and other tournaments,
// max_active bounds the running ones, unknown ids are 404, the list
// filters by state.
func TestTournamentRegistry(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		svc := m.service(t, func(o *Options, _ *store.Store) { o.Config.Tournaments.MaxActive = 2 })
		ctx := ctxT(t, 20*time.Second)
		now := time.Now()
		for _, tc := range []struct {
			title string
			tr    competition.Tournament
			code  rank.Code
			field string
		}{
			{"a configured family", running("weekly", now), rank.CodeAlreadyExists, "id"},
			{"a configured key group", running("wk_group", now), rank.CodeAlreadyExists, "id"},
			{"max_size 0", func() competition.Tournament { tr := running("z", now); tr.MaxSize = ptr(int64(0)); return tr }(), rank.CodeInvalidArgument, "max_size"},
		} {
			_, err := svc.CreateTournament(ctx, tc.tr)
			var re *rank.Error
			if !errors.As(err, &re) || re.Code != tc.code || re.Field != tc.field {
				t.Errorf("%s: %v, want %s on %s", tc.title, err, tc.code, tc.field)
			}
		}
		mustCreate(t, svc, running("t1", now))
		up := running("t2", now)
		later := now.Add(24 * time.Hour)
		up.Start = &later
		up.End = ptr(later.Add(time.Hour))
		mustCreate(t, svc, up)
		if _, err := svc.CreateTournament(ctx, running("t1", now)); rank.CodeOf(err) != rank.CodeAlreadyExists {
			t.Errorf("same id twice: %v", err)
		}
		if _, err := svc.CreateTournament(ctx, running("t3", now)); rank.CodeOf(err) != rank.CodeOutOfRange {
			t.Errorf("a third active tournament with max_active 2: %v, want out_of_range", err)
		}
		if _, err := svc.CancelTournament(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, svc, running("t3", now)) // a cancelled one no longer counts
		// The definitions are where the mode keeps them, and nowhere else.
		redisDefs, _, err := redisRegistry{be: svc.tourBE, k: svc.layout.Tournaments()}.Tournaments(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.ledger {
			ledgerDefs, v, err := svc.ledger.Tournaments(ctx)
			if err != nil || len(ledgerDefs) != 3 || v != 4 || len(redisDefs) != 0 {
				t.Fatalf("ledger registry %d tournaments at version %d (%v), Redis %d; want 3 at version 4 (3 created, 1 cancelled), none in Redis",
					len(ledgerDefs), v, err, len(redisDefs))
			}
		} else if len(redisDefs) != 3 {
			t.Fatalf("Redis registry %d tournaments; want 3", len(redisDefs))
		}
		if _, err := svc.Tournament(ctx, "nope"); rank.CodeOf(err) != rank.CodeUnknownTournament {
			t.Errorf("unknown: %v", err)
		}
		if _, err := svc.Join(ctx, "nope", "u1"); rank.CodeOf(err) != rank.CodeUnknownTournament {
			t.Errorf("join unknown: %v", err)
		}
		if _, err := svc.ApplyEvent(ctx, sumEv("e1", "nope", "u1", 1, nil)); rank.CodeOf(err) != rank.CodeUnknownFamily {
			t.Errorf("event to an unknown family: %v", err)
		}
		for state, want := range map[string][]string{"": {"t1", "t2", "t3"}, "active": {"t3"}, "upcoming": {"t2"}, "cancelled": {"t1"}, "ended": {}} {
			l, err := svc.Tournaments(ctx, state)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range l.Tournaments {
				got = append(got, x.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("state %q: %v, want %v", state, got, want)
			}
		}
		// An upcoming tournament takes joins (for its first period) but no
		// events yet.
		if r, err := svc.Join(ctx, "t2", "u1"); err != nil || !r.Joined {
			t.Errorf("join upcoming: %+v, %v", r, err)
		}
		if _, err := svc.ApplyEvent(ctx, sumEv("e2", "t2", "u1", 1, nil)); rank.CodeOf(err) != rank.CodePeriodClosed {
			t.Errorf("event before start: %v, want period_closed", err)
		}
	})
}

// TestTournamentRecurring: a reset every hour with a 20-minute window opens
// a new period per reset; events in the gap are refused, joins there go to
// the next window, and joins count per period.
func TestTournamentRecurring(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		clock := newFlowClock(time.Date(2026, 12, 5, 10, 5, 0, 0, time.UTC))
		svc := m.service(t, func(o *Options, _ *store.Store) { o.Now = clock.Now })
		ctx := ctxT(t, 20*time.Second)
		start := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
		mustCreate(t, svc, competition.Tournament{Tournament: wire.Tournament{ID: "hourly", Reset: "0 * * * *", Duration: "20m", Start: &start,
			JoinRequired: true, MaxSize: ptr(int64(1))}})
		r, err := svc.Join(ctx, "hourly", "u1")
		if err != nil || r.Period != "20261205T1000" {
			t.Fatalf("join at 10:05: %+v, %v", r, err)
		}
		if _, err := svc.Join(ctx, "hourly", "u2"); rank.CodeOf(err) != rank.CodeTournamentFull {
			t.Fatalf("second seat of max_size 1: %v", err)
		}
		res := mustApplyEvent(t, svc, sumEv("e1", "hourly", "u1", 5, nil))
		if res.Period != "20261205T1000" {
			t.Fatalf("event period %s", res.Period)
		}
		clock.JumpTo(time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC)) // in the gap (past 10:20 + 10s grace)
		if _, err := svc.ApplyEvent(ctx, sumEv("e2", "hourly", "u1", 5, nil)); rank.CodeOf(err) != rank.CodePeriodClosed {
			t.Fatalf("event in the gap: %v, want period_closed", err)
		}
		r, err = svc.Join(ctx, "hourly", "u2") // the next window has its own seats
		if err != nil || !r.Joined || r.Period != "20261205T1100" || r.Size != 1 {
			t.Fatalf("join in the gap: %+v, %v; want a seat in 20261205T1100", r, err)
		}
		clock.JumpTo(time.Date(2026, 12, 5, 11, 1, 0, 0, time.UTC))
		if _, err := svc.ApplyEvent(ctx, sumEv("e3", "hourly", "u1", 5, nil)); rank.CodeOf(err) != rank.CodeNotJoined {
			t.Fatalf("u1 in the next period without a join: %v, want not_joined", err)
		}
		mustApplyEvent(t, svc, sumEv("e4", "hourly", "u2", 9, nil))
		wantTop(t, svc, nationalRef("hourly", "20261205T1000"), []userPts{{"u1", 5}})
		wantTop(t, svc, nationalRef("hourly", "current"), []userPts{{"u2", 9}})
	})
}

// TestTournamentLifecycle: the scheduler freezes a tournament period at end
// + grace and archives it (Redis-only mode), as for a configured family;
// reads go on.
func TestTournamentLifecycle(t *testing.T) {
	t.Parallel()
	clock := newFlowClock(time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC))
	var st *store.Store
	svc := newClusterServiceWith(t, tourFamilies, func(o *Options, s *store.Store) { o.Now, st = clock.Now, s })
	ctx := ctxT(t, 30*time.Second)
	start, end := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	mustCreate(t, svc, competition.Tournament{Tournament: wire.Tournament{ID: "final", Start: &start, End: &end,
		Lifecycle: &competition.Lifecycle{Archive: &competition.Step{After: "1h"}}}})
	mustApplyEvent(t, svc, sumEv("e1", "final", "u1", 3, nil))
	sched, err := svc.NewScheduler(SchedulerOptions{Lease: st.NewLease(svc.layout.Lease("lifecycle"), "gw-t", 5*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	const id = "20261205T1000"
	state := func() string {
		d, err := svc.PeriodDetail(ctx, "final", id)
		if err != nil {
			t.Fatal(err)
		}
		return d.State
	}
	sched.Tick(ctx)
	if s := state(); s != "open" {
		t.Fatalf("before the end: %s", s)
	}
	clock.JumpTo(end.Add(11 * time.Second)) // end + grace (10s)
	sched.Tick(ctx)
	if s := state(); s != "frozen" {
		t.Fatalf("after end + grace: %s, want frozen", s)
	}
	if _, err := svc.Join(ctx, "final", "u2"); rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Errorf("join after the end: %v", err)
	}
	clock.JumpTo(end.Add(time.Hour + 12*time.Second))
	sched.Tick(ctx)
	if s := state(); s != "archived" {
		t.Fatalf("an hour after the freeze: %s, want archived", s)
	}
	wantTop(t, svc, nationalRef("final", id), []userPts{{"u1", 3}})
	if info, err := svc.Tournament(ctx, "final"); err != nil || info.State != competition.StateEnded || info.Period != id {
		t.Errorf("ended tournament: %+v, %v", info, err)
	}
}

// ctxT is a context that ends with the test, or after d.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestTournamentBoardReadsLikeAFamily: a tournament board reads exactly like
// a configured family's board with the same rules and shards, fed the same
// events (the property test holds the configured board to its reference):
// top, every member's standing, offset and cursor pages, counts. Refused
// events (not joined, out of attempts) and replays change nothing.
func TestTournamentBoardReadsLikeAFamily(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, `  twin:
    period: all
    tie: first
    rank: competition
    dimensions:
      national: {shards: 4}
`)
	tr := running("twin-cup", time.Now())
	tr.Tie, tr.Rank, tr.Shards, tr.JoinRequired, tr.MaxAttempts = "first", "competition", ptr(4), true, ptr(int64(6))
	mustCreate(t, svc, tr)
	ctx := ctxT(t, 60*time.Second)
	const users = 80
	for i := range users {
		if i%10 == 9 {
			continue // never joins: its events are refused
		}
		if _, err := svc.Join(ctx, "twin-cup", fmt.Sprintf("m%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	tries := map[string]int{}
	for i := range 600 {
		u := fmt.Sprintf("m%02d", (i*37+i/11)%users)
		d := int64(1 + (i*13)%4)
		id := fmt.Sprintf("e%d", i)
		_, err := svc.ApplyEvent(ctx, sumEv(id, "twin-cup", u, d, nil))
		switch {
		case u[len(u)-1] == '9':
			if rank.CodeOf(err) != rank.CodeNotJoined {
				t.Fatalf("%s (never joined): %v", id, err)
			}
			continue
		case tries[u] >= 6:
			if rank.CodeOf(err) != rank.CodeAttemptsExhausted {
				t.Fatalf("%s (%s out of attempts): %v", id, u, err)
			}
			continue
		case err != nil:
			t.Fatalf("%s: %v", id, err)
		}
		tries[u]++
		mustApplyEvent(t, svc, sumEv(id, "twin", u, d, nil))
		if i%5 == 0 { // a replay, on both
			for _, fam := range []string{"twin-cup", "twin"} {
				if res, err := svc.ApplyEvent(ctx, sumEv(id, fam, u, d, nil)); err != nil || !res.Duplicate {
					t.Fatalf("replay of %s on %s: %+v, %v", id, fam, res, err)
				}
			}
		}
	}
	fb, tb := nationalRef("twin", "all"), nationalRef("twin-cup", "current")
	same := func(what string, a, b any) {
		t.Helper()
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s differ:\nfamily     %v\ntournament %v", what, a, b)
		}
	}
	entries := func(p Page) []string {
		var out []string
		for _, e := range p.Entries {
			out = append(out, fmt.Sprintf("%s:%d@%d#%d", e.User, e.Points, e.Position, e.Rank))
		}
		return out
	}
	ft, err1 := svc.Top(ctx, fb, 1000, primaryRead)
	tt, err2 := svc.Top(ctx, tb, 1000, primaryRead)
	if err1 != nil || err2 != nil || len(ft.Entries) < 50 {
		t.Fatalf("top: %d entries, %v, %v", len(ft.Entries), err1, err2)
	}
	same("top", entries(ft), entries(tt))
	for i := range users {
		u := fmt.Sprintf("m%02d", i)
		a, errA := svc.Member(ctx, fb, u, primaryRead)
		b, errB := svc.Member(ctx, tb, u, primaryRead)
		same("standing of "+u, fmt.Sprint(a.Points, a.Position, a.Rank, a.Members, a.Percentile, rank.CodeOf(errA)),
			fmt.Sprint(b.Points, b.Position, b.Rank, b.Members, b.Percentile, rank.CodeOf(errB)))
	}
	for _, off := range []int{0, 7, 33} {
		a, _ := svc.Entries(ctx, fb, PageQuery{Limit: 9, Offset: off, HasOffset: true}, primaryRead)
		b, _ := svc.Entries(ctx, tb, PageQuery{Limit: 9, Offset: off, HasOffset: true}, primaryRead)
		same(fmt.Sprintf("page at offset %d", off), entries(a), entries(b))
	}
	var ca, cb string
	for range 4 {
		a, err := svc.Entries(ctx, fb, PageQuery{Limit: 11, Cursor: ca}, primaryRead)
		if err != nil {
			t.Fatal(err)
		}
		b, err := svc.Entries(ctx, tb, PageQuery{Limit: 11, Cursor: cb}, primaryRead)
		if err != nil {
			t.Fatal(err)
		}
		same("cursor page", entries(a), entries(b))
		ca, cb = a.NextCursor, b.NextCursor
	}
	a, _ := svc.Count(ctx, fb, 3, 12, primaryRead)
	b, _ := svc.Count(ctx, tb, 3, 12, primaryRead)
	same("count", a.Count, b.Count)
}

// TestTournamentColumns: a tournament with sort columns runs the gated
// columns script: joins and attempts hold, columns order equal points.
func TestTournamentColumns(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		svc := m.service(t, nil)
		tr := running("race-cup", time.Now())
		tr.Aggregate, tr.JoinRequired, tr.MaxAttempts = "max", true, ptr(int64(2))
		tr.Columns = []competition.Column{{Name: "time_ms", Order: "asc", Max: 86_400_000}}
		mustCreate(t, svc, tr)
		ctx := ctxT(t, 20*time.Second)
		ev := func(id, u string, v, ms int64) error {
			e := valEv(id, "race-cup", u, v, nil)
			e.Columns = map[string]int64{"time_ms": ms}
			_, err := svc.ApplyEvent(ctx, e)
			return err
		}
		if err := ev("c0", "a", 10, 500); rank.CodeOf(err) != rank.CodeNotJoined {
			t.Fatalf("before the join: %v", err)
		}
		for _, u := range []string{"a", "b"} {
			if _, err := svc.Join(ctx, "race-cup", u); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range []struct {
			id, u  string
			v, ms  int64
			reject rank.Code
		}{{"c1", "a", 10, 500, ""}, {"c2", "b", 10, 400, ""}, {"c3", "a", 9, 100, ""}, {"c4", "a", 20, 100, rank.CodeAttemptsExhausted}} {
			if err := ev(e.id, e.u, e.v, e.ms); rank.CodeOf(err) != e.reject {
				t.Fatalf("%s: %v, want %q", e.id, err, e.reject)
			}
		}
		// Equal points: b's lower time_ms ranks first.
		wantTop(t, svc, nationalRef("race-cup", "current"), []userPts{{"b", 10}, {"a", 10}})
	})
}

// TestTournamentRefusedEventIsNoAttempt: an event refused for good (its
// total would leave max_points) is no attempt, in both modes — in ledger
// mode the attempt it held before the commit is given back.
func TestTournamentRefusedEventIsNoAttempt(t *testing.T) {
	t.Parallel()
	tourModes(t, func(t *testing.T, m tourMode) {
		svc := m.service(t, nil)
		tr := running("capped", time.Now())
		tr.MaxAttempts, tr.MaxPoints = ptr(int64(2)), ptr(int64(100))
		mustCreate(t, svc, tr)
		ctx := ctxT(t, 20*time.Second)
		for _, e := range []struct {
			id    string
			delta int64
			want  rank.Code
		}{
			{"r1", 60, ""},
			{"r2", 60, rank.CodeOutOfRange}, // 120 > max_points: refused, no attempt
			{"r3", 10, ""},                  // the second attempt
			{"r4", 1, rank.CodeAttemptsExhausted},
		} {
			if _, err := svc.ApplyEvent(ctx, sumEv(e.id, "capped", "u1", e.delta, nil)); rank.CodeOf(err) != e.want {
				t.Fatalf("%s: %v, want %q", e.id, err, e.want)
			}
		}
		wantTop(t, svc, nationalRef("capped", "current"), []userPts{{"u1", 70}})
	})
}

// TestTournamentLedgerRetryHoldsOneAttempt: in ledger mode an event whose
// answer failed after the ledger took it (a crash before the projection)
// keeps its attempt for its retry; the retry takes no second one.
func TestTournamentLedgerRetryHoldsOneAttempt(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	crash := map[string]bool{"once": true}
	var mu sync.Mutex
	svc := newClusterServiceWith(t, tourFamilies, func(o *Options, _ *store.Store) {
		o.Ledger = l
		o.AfterLedgerCommit = func(id string) error {
			mu.Lock()
			defer mu.Unlock()
			if crash[id] {
				delete(crash, id)
				return errors.New("crash between commit and projection")
			}
			return nil
		}
	})
	tr := running("one-shot", time.Now())
	tr.MaxAttempts = ptr(int64(1))
	mustCreate(t, svc, tr)
	ctx := ctxT(t, 20*time.Second)
	if _, err := svc.ApplyEvent(ctx, sumEv("once", "one-shot", "u1", 5, nil)); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("first try: %v, want unavailable", err)
	}
	if _, err := svc.ApplyEvent(ctx, sumEv("once", "one-shot", "u1", 5, nil)); err != nil {
		t.Fatalf("retry: %v; the event holds its attempt", err)
	}
	if _, err := svc.ApplyEvent(ctx, sumEv("twice", "one-shot", "u1", 5, nil)); rank.CodeOf(err) != rank.CodeAttemptsExhausted {
		t.Fatalf("another event: %v, want attempts_exhausted (the retry took no second attempt)", err)
	}
	wantTop(t, svc, nationalRef("one-shot", "current"), []userPts{{"u1", 5}})
}

// TestTournamentLifecycleLedger: in ledger mode the scheduler freezes a
// tournament period at end + grace, settles it from the ledger (its awards
// go to the webhook outbox) and archives it, as for a configured family.
func TestTournamentLifecycleLedger(t *testing.T) {
	t.Parallel()
	clock := newFlowClock(time.Date(2026, 12, 5, 10, 30, 0, 0, time.UTC))
	l := openTestLedger(t)
	var st *store.Store
	svc := newClusterServiceWith(t, tourFamilies, func(o *Options, s *store.Store) { o.Now, o.Ledger, st = clock.Now, l, s })
	ctx := ctxT(t, 30*time.Second)
	start, end := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	mustCreate(t, svc, competition.Tournament{Tournament: wire.Tournament{ID: "final", Start: &start, End: &end,
		Lifecycle: &competition.Lifecycle{Settle: &competition.Step{After: "5m", Top: 2}, Archive: &competition.Step{After: "1h"}}}})
	for i, u := range []string{"u1", "u2", "u3"} {
		mustApplyEvent(t, svc, sumEv(fmt.Sprintf("e%d", i), "final", u, int64(10-i), nil))
	}
	sched, err := svc.NewScheduler(SchedulerOptions{Lease: st.NewLease(svc.layout.Lease("lifecycle"), "gw-t", 5*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	const id = "20261205T1000"
	for _, step := range []struct {
		at   time.Time
		want string
	}{
		{end.Add(11 * time.Second), "frozen"},                  // end + grace (10s)
		{end.Add(5*time.Minute + 12*time.Second), "settled"},   // freeze + 5m
		{end.Add(65*time.Minute + 13*time.Second), "archived"}, // settlement + 1h
	} {
		clock.JumpTo(step.at)
		sched.Tick(ctx)
		if got, err := l.State(ctx, "final", id); err != nil || got != step.want {
			t.Fatalf("at %s: ledger state %q, %v; want %s", step.at.Format(time.TimeOnly), got, err, step.want)
		}
	}
	awards, err := l.Outbox(ctx, "final", id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range awards {
		got = append(got, fmt.Sprintf("%s:%s#%d=%d", a.Board, a.Member, a.Rank, a.Points))
	}
	if want := []string{"national:u1#1=10", "national:u2#2=9"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("awards %v; want %v", got, want)
	}
	wantTop(t, svc, nationalRef("final", id), []userPts{{"u1", 10}, {"u2", 9}, {"u3", 8}})
}

// TestTournamentLedgerRebuildRestoresSeats: in ledger mode the ledger keeps
// the seats; after Redis lost a tournament board (its shards, seats, marks
// and attempts), a rebuild restores the standings, every joined member (one
// without an event too) and the attempts used, so the bounds hold as before.
func TestTournamentLedgerRebuildRestoresSeats(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	svc := newClusterServiceWith(t, tourFamilies, func(o *Options, _ *store.Store) { o.Ledger = l })
	tr := running("kept", time.Now())
	tr.JoinRequired, tr.MaxAttempts, tr.MaxSize, tr.Shards = true, ptr(int64(2)), ptr(int64(3)), ptr(4)
	mustCreate(t, svc, tr)
	ctx := ctxT(t, 30*time.Second)
	for _, u := range []string{"u1", "u2", "u3"} {
		if _, err := svc.Join(ctx, "kept", u); err != nil {
			t.Fatal(err)
		}
	}
	mustApplyEvent(t, svc, sumEv("a1", "kept", "u1", 5, nil))
	mustApplyEvent(t, svc, sumEv("a2", "kept", "u1", 6, nil))
	mustApplyEvent(t, svc, sumEv("b1", "kept", "u2", 4, nil))
	ref := nationalRef("kept", "current")
	b, err := svc.resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Redis loses the board: every shard's keys, seats, marks and attempts.
	var keys []string
	for i := range b.n {
		k := svc.layout.Keys(b.b, i, b.n)
		keys = append(keys, k.Z, k.M, k.Ev, k.Meta, shard.JoinsKey(k.Z), shard.AttemptsKey(k.Z))
	}
	for _, k := range keys {
		if err := st(svc).Primary().Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Join(ctx, "kept", "u4"); err != nil {
		t.Fatalf("a join on the lost board: %v (the seats are gone until the rebuild)", err)
	}
	if _, err := svc.Rebuild(ctx, ref); err != nil {
		t.Fatal(err)
	}
	wantTop(t, svc, ref, []userPts{{"u1", 11}, {"u2", 4}})
	if info, err := svc.Tournament(ctx, "kept"); err != nil || info.Size != 4 {
		t.Fatalf("size after the rebuild: %d, %v; want 4 (u1-u3 from the ledger, u4 since)", info.Size, err)
	}
	for _, c := range []struct {
		id, user string
		want     rank.Code
	}{
		{"a3", "u1", rank.CodeAttemptsExhausted}, // both attempts used before the loss
		{"a1", "u1", rank.CodeAttemptsExhausted}, // a replay meets the bound first (its hold was lost)
		{"b2", "u2", ""},                         // its second attempt
		{"b3", "u2", rank.CodeAttemptsExhausted},
		{"c1", "u3", ""}, // joined without an event: still joined
		{"d1", "u5", rank.CodeNotJoined},
	} {
		if _, err := svc.ApplyEvent(ctx, sumEv(c.id, "kept", c.user, 1, nil)); rank.CodeOf(err) != c.want {
			t.Fatalf("%s of %s after the rebuild: %v, want %q", c.id, c.user, err, c.want)
		}
	}
	// A replay whose hold was lost gives back the attempt it took: c1 again
	// after u3's count was reset to the ledger's (1).
	if err := st(svc).Primary().Del(ctx, shard.AttemptsKey(svc.layout.ZKey(b.b, shard.Of("u3", b.n), b.n))).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Rebuild(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if res, err := svc.ApplyEvent(ctx, sumEv("c1", "kept", "u3", 1, nil)); err != nil || !res.Duplicate {
		t.Fatalf("replay of c1: %+v, %v; want a duplicate", res, err)
	}
	if _, err := svc.ApplyEvent(ctx, sumEv("c2", "kept", "u3", 1, nil)); err != nil {
		t.Fatalf("u3's second attempt after the replay: %v (the replay took none)", err)
	}
	if _, err := svc.ApplyEvent(ctx, sumEv("c3", "kept", "u3", 1, nil)); rank.CodeOf(err) != rank.CodeAttemptsExhausted {
		t.Fatalf("u3's third: %v, want attempts_exhausted", err)
	}
	wantTop(t, svc, ref, []userPts{{"u1", 11}, {"u2", 5}, {"u3", 2}})
	// An erasure takes the member's seat out of the ledger too.
	if _, err := svc.EraseMember(ctx, "u3", eraser); err != nil {
		t.Fatal(err)
	}
	if joined, attempts, err := l.Seats(ctx, "kept", b.period.ID); err != nil || slices.Contains(joined, "u3") || attempts["u3"] != 0 {
		t.Fatalf("the ledger's seats after erasing u3: %v, %v, %v", joined, attempts, err)
	}
	wantTop(t, svc, ref, []userPts{{"u1", 11}, {"u2", 5}})
}

// failingHolds is a TournamentBackend whose tournament checks fail while
// fail is set.
type failingHolds struct {
	TournamentBackend
	fail atomic.Bool
}

func (f *failingHolds) HoldAttempts(ctx context.Context, hs []store.Hold) ([]string, error) {
	if f.fail.Load() {
		return nil, errors.New("injected: Redis unreachable")
	}
	return f.TournamentBackend.HoldAttempts(ctx, hs)
}

// TestTournamentLedgerBatchChecks: in ledger mode a batch's tournament checks
// run while the batch waits for its commit. A member the checks refuse is
// answered so and the rest of the batch commits; when the checks fail, the
// whole batch fails and nothing of it reaches the ledger, the configured
// family's event included.
func TestTournamentLedgerBatchChecks(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	holds := &failingHolds{}
	svc := newClusterServiceWith(t, tourFamilies, func(o *Options, _ *store.Store) { o.Ledger = l })
	holds.TournamentBackend = svc.tourBE
	svc.tourBE = holds
	tr := running("checked", time.Now())
	tr.JoinRequired = true
	mustCreate(t, svc, tr)
	ctx := ctxT(t, 20*time.Second)
	if _, err := svc.Join(ctx, "checked", "in"); err != nil {
		t.Fatal(err)
	}
	out, err := svc.ApplyBatch(ctx, []Event{
		sumEv("b1", "checked", "in", 5, nil),
		sumEv("b2", "checked", "out", 7, nil),
		sumEv("b3", "weekly", "w1", 3, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []rank.Code{"", rank.CodeNotJoined, ""} {
		if rank.CodeOf(out[i].Err) != want {
			t.Fatalf("item %d: %v, want %q", i, out[i].Err, want)
		}
	}
	wantTop(t, svc, nationalRef("checked", "current"), []userPts{{"in", 5}})

	holds.fail.Store(true)
	if _, err := svc.ApplyBatch(ctx, []Event{
		sumEv("f1", "checked", "in", 1, nil),
		sumEv("f2", "weekly", "w2", 4, nil),
	}); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("batch with failing checks: %v, want unavailable", err)
	}
	wf, err := svc.family("weekly")
	if err != nil {
		t.Fatal(err)
	}
	if lt, err := l.Total(ctx, "weekly", wf.spec.At(time.Now()).ID, "national", "w2"); err != nil || lt.Points != 0 {
		t.Fatalf("ledger total of w2 after the failed batch: %+v, %v; want none", lt, err)
	}
	holds.fail.Store(false)
	if _, err := svc.ApplyEvent(ctx, sumEv("f1", "checked", "in", 1, nil)); err != nil {
		t.Fatalf("retry after the checks failed: %v", err)
	}
	wantTop(t, svc, nationalRef("checked", "current"), []userPts{{"in", 6}})
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
)

// eraseFamilies: a sharded weekly family with a class dimension (a member
// on many boards), a max family, and a derived family over two inputs under
// one key group.
const eraseFamilies = `  f:
    period: week
    timezone: UTC
    tie: first
    rank: competition
    dimensions:
      national: {shards: 4}
      class: {shards: 2}
  best:
    aggregate: max
    period: all
    dimensions:
      national: {shards: 2}
  base:
    period: all
    key_group: season
    max_points: 1000
    dimensions:
      national: {shards: 4}
  bonus:
    period: all
    key_group: season
    max_points: 1000
    dimensions:
      national: {shards: 4}
  final:
    source: derived
    period: all
    key_group: season
    max_points: 3000
    derived_from:
      inputs:
        - {family: base}
        - {family: bonus, weight: 2}
    dimensions:
      national: {shards: 4}
  proj:
    source: projection
    period: all
    dimensions:
      national: {shards: 2}
`

var eraser = Erasure{Operator: "dpo@x", Reason: "erasure request"}

// crashingErase is a backend whose erasure script calls stop answering
// after `after` board shards (the ones before it run for real): an erasure
// cut short midway, as a crash or a lost node would leave it.
type crashingErase struct {
	Backend
	mu    sync.Mutex
	after int // board shards erased before the failure; < 0: never fail
	done  int
}

func (c *crashingErase) EraseMember(ctx context.Context, es []store.Erase) []store.EraseResult {
	c.mu.Lock()
	ok := len(es)
	if c.after >= 0 {
		ok = max(0, min(len(es), c.after-c.done))
	}
	c.done += ok
	c.mu.Unlock()
	out := c.Backend.EraseMember(ctx, es[:ok])
	for range es[ok:] {
		out = append(out, store.EraseResult{Err: errors.New("injected: node lost")})
	}
	return out
}

func (c *crashingErase) setAfter(n int) {
	c.mu.Lock()
	c.after, c.done = n, 0
	c.mu.Unlock()
}

// topsOf reads the whole top of every board.
func topsOf(t *testing.T, svc *Service, refs []BoardRef) map[BoardRef][]rank.Entry {
	t.Helper()
	out := map[BoardRef][]rank.Entry{}
	for _, ref := range refs {
		out[ref] = topOf(t, svc, ref, 1000, primaryRead)
	}
	return out
}

// without is a top with one member taken out (the others keep their order
// and points; positions close up).
func without(es []rank.Entry, user string) []userPts {
	var out []userPts
	for _, e := range es {
		if e.User != user {
			out = append(out, userPts{e.User, e.Points})
		}
	}
	return out
}

func sameTop(t *testing.T, ref BoardRef, got []rank.Entry, want []userPts) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].User == want[i].user && got[i].Points == want[i].points
	}
	if !ok {
		t.Fatalf("top of %+v = %+v, want %+v", ref, got, want)
	}
}

// A member on 200 boards is erased by an erasure that fails after 120
// board shards (an injected node loss), then by a second run that finishes
// it: afterwards nothing of the member remains (every board not_ranked, the
// index empty, no profile, the export 404), every other member's standing
// is what it was, and a third run answers zeros. In ledger mode the ledger
// rows go too and reconcile finds no drift on any board.
func TestEraseMemberResumes(t *testing.T) {
	t.Parallel()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			crash := &crashingErase{after: -1}
			var l *ledger.Ledger
			if m.ledger {
				l = openTestLedger(t)
			}
			svc := newClusterServiceWith(t, eraseFamilies, func(o *Options, st *store.Store) {
				crash.Backend = st
				o.Backend = crash
				if l != nil {
					o.Ledger = l
				}
			})
			svc.eraseChunk = 50
			ctx := context.Background()
			const classes = 199 // + national: 200 boards
			refs := []BoardRef{{Family: "f", Period: "current", Dimension: "national"}}
			var evs []Event
			for c := range classes {
				dims := map[string]string{"class": fmt.Sprintf("c%03d", c)}
				refs = append(refs, BoardRef{Family: "f", Period: "current", Dimension: "class:" + dims["class"]})
				evs = append(evs, sumEv(fmt.Sprintf("v%d", c), "f", "victim", int64(1+c%7), dims),
					sumEv(fmt.Sprintf("a%d", c), "f", "alice", int64(3), dims),
					sumEv(fmt.Sprintf("b%d", c), "f", "bob", int64(1+c%5), dims))
			}
			for len(evs) > 0 {
				n := min(len(evs), 200)
				items, err := svc.ApplyBatch(ctx, evs[:n])
				if err != nil {
					t.Fatal(err)
				}
				for i, it := range items {
					if it.Err != nil {
						t.Fatalf("event %s: %v", evs[i].EventID, it.Err)
					}
				}
				evs = evs[n:]
			}
			if err := svc.PutProfile(ctx, "victim", Profile{Name: "Vic"}); err != nil {
				t.Fatal(err)
			}
			if ex, err := svc.ExportMember(ctx, "victim"); err != nil || len(ex.Standings) != 200 || ex.Profile["name"] != "Vic" ||
				m.ledger != (len(ex.Events) == classes) {
				t.Fatalf("export before: %d standings, profile %v, %d events, %v; want 200, Vic, %d events in ledger mode",
					len(ex.Standings), ex.Profile, len(ex.Events), err, classes)
			}
			before := topsOf(t, svc, refs)
			idx := svc.layout.MemberBoards("victim")
			if zs, err := svc.eraseBE.MemberBoards(ctx, idx); err != nil || len(zs) != 200 {
				t.Fatalf("board index before: %d entries, %v; want 200", len(zs), err)
			}

			crash.setAfter(120)
			if _, err := svc.EraseMember(ctx, "victim", eraser); rank.CodeOf(err) != rank.CodeUnavailable {
				t.Fatalf("erasure cut short: %v, want unavailable", err)
			}
			if zs, _ := svc.eraseBE.MemberBoards(ctx, idx); len(zs) != 80 {
				t.Fatalf("board index after 120 erased: %d entries, want 80", len(zs))
			}
			crash.setAfter(-1)
			res, err := svc.EraseMember(ctx, "victim", eraser)
			if err != nil {
				t.Fatal(err)
			}
			if res.Boards != 80 || !res.Profile || (m.ledger && res.LedgerRows != 0) {
				t.Fatalf("second run: %+v; want the 80 boards left and the profile (ledger rows went in the first run)", res)
			}
			for _, ref := range refs {
				if _, err := svc.Member(ctx, ref, "victim", primaryRead); rank.CodeOf(err) != rank.CodeNotRanked {
					t.Fatalf("%+v after the erasure: %v, want not_ranked", ref, err)
				}
				sameTop(t, ref, topOf(t, svc, ref, 1000, primaryRead), without(before[ref], "victim"))
				var alice int64
				for _, e := range before[ref] {
					if e.User == "alice" {
						alice = e.Points
					}
				}
				st, err := svc.Member(ctx, ref, "alice", primaryRead)
				if err != nil || st.Members != int64(len(before[ref])-1) || st.Points != alice {
					t.Fatalf("alice on %+v: %+v %v; want %d points among %d members", ref, st, err, alice, len(before[ref])-1)
				}
			}
			if zs, _ := svc.eraseBE.MemberBoards(ctx, idx); len(zs) != 0 {
				t.Fatalf("board index after the erasure: %v, want empty", zs)
			}
			if _, err := svc.ExportMember(ctx, "victim"); rank.CodeOf(err) != rank.CodeNotRanked {
				t.Fatalf("export after the erasure: %v, want not_ranked", err)
			}
			if res, err := svc.EraseMember(ctx, "victim", eraser); err != nil || res != (ErasureResult{Member: "victim"}) {
				t.Fatalf("third run: %+v %v, want zeros", res, err)
			}
			if m.ledger {
				for _, ref := range refs {
					rep, err := svc.Reconcile(ctx, ref)
					if err != nil || rep.Drifted != 0 {
						t.Fatalf("reconcile %+v: %+v %v, want no drift", ref, rep, err)
					}
				}
				if mbs, err := l.MemberBoards(ctx, "victim"); err != nil || len(mbs) != 0 {
					t.Fatalf("ledger boards after the erasure: %v %v", mbs, err)
				}
			}
			// Later events count as new.
			if _, err := svc.ApplyEvent(ctx, sumEv("late", "f", "victim", 4, nil)); err != nil {
				t.Fatal(err)
			}
			if st, err := svc.Member(ctx, refs[0], "victim", primaryRead); err != nil || st.Points != 4 {
				t.Fatalf("victim after a later event: %+v %v, want 4 points", st, err)
			}
		})
	}
}

// The erasure reaches every kind of board: a frozen earlier period, an
// all-time max board, a derived family's board (recomputed from inputs the
// member is on), a projection board, a board written with columns none
// here; and bad input is a 4xx that changes nothing.
func TestEraseMemberEverywhere(t *testing.T) {
	t.Parallel()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			// The clock starts last week: its board takes events, then the
			// week closes and is frozen.
			var clock atomic.Int64
			now := time.Now()
			lastWeek := now.Add(-7 * 24 * time.Hour)
			clock.Store(lastWeek.UnixNano())
			var l *ledger.Ledger
			if m.ledger {
				l = openTestLedger(t)
			}
			svc := newClusterServiceWith(t, eraseFamilies, func(o *Options, _ *store.Store) {
				o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
				if l != nil {
					o.Ledger = l
				}
			})
			ctx := context.Background()
			prev := svc.families["f"].spec.At(lastWeek).ID
			for _, ev := range []Event{sumEv("old-v", "f", "victim", 5, nil), sumEv("old-o", "f", "other", 6, nil)} {
				if _, err := svc.ApplyEvent(ctx, ev); err != nil {
					t.Fatalf("%s: %v", ev.EventID, err)
				}
			}
			clock.Store(now.UnixNano())
			for _, ev := range []Event{
				valEv("b-v", "best", "victim", 90, nil), valEv("b-o", "best", "other", 80, nil),
				sumEv("s-v", "base", "victim", 10, nil), sumEv("s-o", "base", "other", 3, nil),
				sumEv("n-v", "bonus", "victim", 1, nil),
			} {
				if _, err := svc.ApplyEvent(ctx, ev); err != nil {
					t.Fatalf("%s: %v", ev.EventID, err)
				}
			}
			if _, err := svc.Project(ctx, BoardRef{Family: "proj", Period: "all", Dimension: "national"}, "victim", Projection{Version: 3, Points: 42}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Derive(ctx, "final", "all"); err != nil {
				t.Fatal(err)
			}
			prevRef := BoardRef{Family: "f", Period: prev, Dimension: "national"}
			refs := []BoardRef{prevRef, {Family: "best", Period: "all", Dimension: "national"},
				{Family: "base", Period: "all", Dimension: "national"}, {Family: "bonus", Period: "all", Dimension: "national"},
				{Family: "final", Period: "all", Dimension: "national"}, {Family: "proj", Period: "all", Dimension: "national"}}
			if _, err := svc.Freeze(ctx, "f", prev); err != nil {
				t.Fatal(err)
			}
			if ex, err := svc.ExportMember(ctx, "victim"); err != nil || len(ex.Standings) != len(refs) {
				t.Fatalf("export: %+v %v; want %d standings", ex, err, len(refs))
			}
			before := topsOf(t, svc, refs)

			for _, bad := range []struct {
				name, user string
				r          Erasure
				field      string
			}{
				{"empty member", "", eraser, "member"},
				{"member with a brace", "a{b}", eraser, "member"},
				{"no operator", "victim", Erasure{Reason: "x"}, "operator"},
				{"no reason", "victim", Erasure{Operator: "x"}, "reason"},
			} {
				_, err := svc.EraseMember(ctx, bad.user, bad.r)
				var re *rank.Error
				if !errors.As(err, &re) || re.Code != rank.CodeInvalidArgument || re.Field != bad.field {
					t.Fatalf("%s: %v, want invalid_argument naming %s", bad.name, err, bad.field)
				}
			}
			if _, err := svc.Member(ctx, refs[1], "victim", primaryRead); err != nil {
				t.Fatalf("bad input changed something: %v", err)
			}

			res, err := svc.EraseMember(ctx, "victim", eraser)
			if err != nil || res.Boards != len(refs) {
				t.Fatalf("erasure: %+v %v; want %d boards", res, err, len(refs))
			}
			for _, ref := range refs {
				if _, err := svc.Member(ctx, ref, "victim", primaryRead); rank.CodeOf(err) != rank.CodeNotRanked {
					t.Fatalf("%+v after the erasure: %v, want not_ranked", ref, err)
				}
				sameTop(t, ref, topOf(t, svc, ref, 1000, primaryRead), without(before[ref], "victim"))
			}
			// A later projection counts as new (its version store went too).
			if r, err := svc.Project(ctx, BoardRef{Family: "proj", Period: "all", Dimension: "national"}, "victim", Projection{Version: 1, Points: 7}); err != nil || !r.Applied {
				t.Fatalf("projection after the erasure: %+v %v, want applied", r, err)
			}
		})
	}
}

// The board index lists exactly the board shards written: one per board an
// event reached; a replay indexes again what it names.
func TestMemberBoardIndex(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, eraseFamilies)
	ctx := context.Background()
	for _, ev := range []Event{
		sumEv("e1", "f", "u1", 2, map[string]string{"class": "c1"}),
		sumEv("e2", "f", "u1", 2, map[string]string{"class": "c2"}),
		sumEv("e2", "f", "u1", 2, map[string]string{"class": "c2"}), // a replay
		valEv("e3", "best", "u1", 9, nil),
	} {
		if _, err := svc.ApplyEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	zs, err := svc.eraseBE.MemberBoards(ctx, svc.layout.MemberBoards("u1"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, z := range zs {
		ref, ok := svc.layout.ParseZKey(z)
		if !ok {
			t.Fatalf("index entry %q is not a board shard key", z)
		}
		names = append(names, ref.Board.String())
	}
	slices.Sort(names)
	p := svc.families["f"].spec.At(svc.now()).ID
	want := []string{"best/all/national", "f/" + p + "/class:c1", "f/" + p + "/class:c2", "f/" + p + "/national"}
	if !slices.Equal(names, want) {
		t.Fatalf("index of u1: %v, want %v", names, want)
	}
	// A write whose index update was lost (here: the index forgotten) is
	// indexed again by its retry, which the board answers as a replay.
	if err := svc.eraseBE.ForgetBoards(ctx, svc.layout.MemberBoards("u1"), zs); err != nil {
		t.Fatal(err)
	}
	if res, err := svc.ApplyEvent(ctx, sumEv("e1", "f", "u1", 2, map[string]string{"class": "c1"})); err != nil || !res.Duplicate {
		t.Fatalf("retry of e1: %+v %v, want a duplicate", res, err)
	}
	again, err := svc.eraseBE.MemberBoards(ctx, svc.layout.MemberBoards("u1"))
	if err != nil || len(again) != 2 {
		t.Fatalf("index after the retry: %v %v, want the 2 board shards of e1", again, err)
	}
}

// racingErase runs write once, after an erasure's first round erased its
// board shards and before it forgets them in the member's board index: a
// write of the member that lands between the two.
type racingErase struct {
	EraseBackend
	once  sync.Once
	write func()
}

func (r *racingErase) ForgetBoards(ctx context.Context, key string, zs []string) error {
	r.once.Do(r.write)
	return r.EraseBackend.ForgetBoards(ctx, key, zs)
}

// A write that places the member on a board shard the erasure has just
// cleaned, before the erasure forgets that shard, survives the erasure and
// is in the index: an acknowledged write is always there, so the next
// erasure finds it.
func TestEraseMemberRacingAWrite(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, eraseFamilies)
	ctx := context.Background()
	mustApplyEvent(t, svc, sumEv("e1", "f", "u1", 2, map[string]string{"class": "c1"}))
	idx := svc.layout.MemberBoards("u1")
	before, err := svc.eraseBE.MemberBoards(ctx, idx)
	if err != nil || len(before) != 2 {
		t.Fatalf("index of u1: %v %v, want the 2 board shards of e1", before, err)
	}
	raced := sumEv("e2", "f", "u1", 3, map[string]string{"class": "c1"})
	var racedErr error
	be := svc.eraseBE
	svc.eraseBE = &racingErase{EraseBackend: be, write: func() { _, racedErr = svc.ApplyEvent(ctx, raced) }}
	if er, err := svc.EraseMember(ctx, "u1", eraser); err != nil || er.Boards != 2 {
		t.Fatalf("erasure: %+v %v, want u1 erased from the 2 boards of e1", er, err)
	}
	if racedErr != nil {
		t.Fatalf("write during the erasure: %v", racedErr)
	}
	after, err := be.MemberBoards(ctx, idx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(after)
	slices.Sort(before)
	if !slices.Equal(after, before) {
		t.Fatalf("index after the erasure: %v, want the 2 board shards the write during it placed u1 on (%v)", after, before)
	}
	for _, dim := range []string{"national", "class:c1"} {
		ref := BoardRef{Family: "f", Period: svc.families["f"].spec.At(svc.now()).ID, Dimension: dim}
		if ms, err := svc.Member(ctx, ref, "u1", ReadOptions{Consistency: ConsistencyPrimary}); err != nil || ms.Points != 3 {
			t.Fatalf("u1 on %s after the erasure: %+v %v, want the 3 points of the write during it", dim, ms, err)
		}
	}
	svc.eraseBE = be
	er, err := svc.EraseMember(ctx, "u1", eraser)
	if err != nil || er.Boards != 2 {
		t.Fatalf("second erasure: %+v %v, want u1 erased from the 2 boards of e2", er, err)
	}
	if zs, err := be.MemberBoards(ctx, idx); err != nil || len(zs) != 0 {
		t.Fatalf("index after the second erasure: %v %v, want empty", zs, err)
	}
}

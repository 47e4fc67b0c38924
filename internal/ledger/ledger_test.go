package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rankgate/rankgate/internal/rank"

	"github.com/rankgate/rankgate/internal/soon"
)

const defaultTestDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

const testPeriod = "2026-W34"

func testDSN() string {
	if dsn := os.Getenv("RANKGATE_TEST_PG_DSN"); dsn != "" {
		return dsn
	}
	return defaultTestDSN
}

var probe struct {
	once sync.Once
	err  error
}

// needDB skips (fails under CI=true) when the test database is unreachable.
func needDB(t *testing.T) {
	t.Helper()
	probe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, testDSN())
		if err == nil {
			err = c.Ping(ctx)
			_ = c.Close(ctx)
		}
		probe.err = err
	})
	if probe.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at RANKGATE_TEST_PG_DSN is unreachable: %v", probe.err)
		}
		t.Skipf("PostgreSQL at RANKGATE_TEST_PG_DSN is unreachable (set CI=true to fail): %v", probe.err)
	}
}

func randomSchema(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "t_" + hex.EncodeToString(b[:])
}

// dropSchemaAtCleanup drops schema once the test is over.
func dropSchemaAtCleanup(t *testing.T, schema string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, testDSN())
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
}

// openTest opens a ledger in a fresh schema, dropped at cleanup.
func openTest(t *testing.T) *Ledger {
	t.Helper()
	return openTestConns(t, 8)
}

// openTestConns is openTest with a pool of maxConns connections.
func openTestConns(t *testing.T, maxConns int) *Ledger {
	t.Helper()
	needDB(t)
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	l, err := Open(t.Context(), testDSN(), Options{Schema: schema, MaxConns: maxConns})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

// queryInt runs a one-value query in the ledger's schema.
func queryInt(t *testing.T, l *Ledger, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := l.withConn(t.Context(), func(c *pgx.Conn) error { return c.QueryRow(t.Context(), sql, args...).Scan(&n) }); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

var (
	sumTie    = Rules{Aggregate: "sum", Desc: true, TieFirst: true, MaxPoints: 1_000_000, SeqCapacity: 1 << 20}
	sumMember = Rules{Aggregate: "sum", Desc: true, MaxPoints: 1_000_000}
	maxTie    = Rules{Aggregate: "max", Desc: true, TieFirst: true, MaxPoints: 1_000_000, SeqCapacity: 1 << 20}
	maxMember = Rules{Aggregate: "max", Desc: true, MaxPoints: 1_000_000}
	minTie    = Rules{Aggregate: "min", Desc: false, TieFirst: true, MaxPoints: 1_000_000, SeqCapacity: 1 << 20}
)

func ptr(v int64) *int64 { return &v }

// eid scopes an event id to its family: tests share one ledger per test
// function, and event ids are unique ledger-wide.
func eid(fam, id string) string {
	if id == "" {
		return ""
	}
	return fam + "." + id
}

func sumEv(id, fam, member string, delta int64, boards ...string) Event {
	if len(boards) == 0 {
		boards = []string{"national"}
	}
	return Event{EventID: eid(fam, id), Family: fam, Period: testPeriod, Member: member, Boards: boards, Delta: ptr(delta), RulesVersion: "r1"}
}

func valEv(id, fam, member string, v int64, boards ...string) Event {
	ev := sumEv(id, fam, member, 0, boards...)
	ev.Delta, ev.Value = nil, ptr(v)
	return ev
}

func revEv(id, fam, member, orig string) Event {
	return Event{EventID: eid(fam, id), Kind: KindReversal, Family: fam, Period: testPeriod, Member: member, Reverses: eid(fam, orig)}
}

func projEv(fam, member string, version, total int64) Event {
	return Event{Kind: KindProjection, Family: fam, Period: testPeriod, Member: member,
		Boards: []string{"national"}, Value: ptr(total), Version: version}
}

// bt is the expected totals on board "national".
func bt(points, version, seq int64, present, changed bool) BoardTotal {
	return BoardTotal{Board: "national", Points: points, Version: version, Seq: seq, Present: present, Changed: changed}
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	needDB(t)
	versions := func(t *testing.T, l *Ledger) []int32 {
		t.Helper()
		var vs []int32
		err := l.withConn(t.Context(), func(c *pgx.Conn) error {
			rows, err := c.Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
			if err != nil {
				return err
			}
			vs, err = pgx.CollectRows(rows, pgx.RowTo[int32])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for _, m := range ms {
		want = append(want, int32(m.version))
	}
	tests := []struct {
		name  string
		opens int
	}{
		{"open twice in turn", 0},
		{"eight concurrent opens", 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema := randomSchema(t)
			dropSchemaAtCleanup(t, schema)
			open := func() (*Ledger, error) {
				return Open(t.Context(), testDSN(), Options{Schema: schema, MaxConns: 2})
			}
			var ls []*Ledger
			if tc.opens == 0 {
				for range 2 {
					l, err := open()
					if err != nil {
						t.Fatalf("Open: %v", err)
					}
					ls = append(ls, l)
				}
			} else {
				ls = make([]*Ledger, tc.opens)
				errs := make([]error, tc.opens)
				var wg sync.WaitGroup
				for i := range tc.opens {
					wg.Go(func() { ls[i], errs[i] = open() })
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("Open %d: %v", i, err)
					}
				}
			}
			for _, l := range ls {
				t.Cleanup(l.Close)
				if got := versions(t, l); !slices.Equal(got, want) {
					t.Errorf("schema_migrations = %v, want %v", got, want)
				}
				if err := l.Ping(t.Context()); err != nil {
					t.Errorf("Ping: %v", err)
				}
			}
			// 0007: totals pages keep room for HOT updates.
			var opts []string
			err := ls[0].withConn(t.Context(), func(c *pgx.Conn) error {
				return c.QueryRow(t.Context(), `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'totals'::regclass`).Scan(&opts)
			})
			if err != nil || !slices.Contains(opts, "fillfactor=70") {
				t.Errorf("totals reloptions = %v (%v), want fillfactor=70", opts, err)
			}
			// Every Open wrote through to the same tables.
			if _, err := ls[0].Record(t.Context(), sumEv("m1", "f", "u1", 3), sumTie); err != nil {
				t.Fatal(err)
			}
			if got, err := ls[len(ls)-1].Total(t.Context(), "f", testPeriod, "national", "u1"); err != nil || got.Points != 3 {
				t.Errorf("Total through another handle = %+v, %v; want 3 points", got, err)
			}
		})
	}
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	needDB(t)
	tests := []struct {
		name    string
		dsn     string
		opts    Options
		wantErr error
	}{
		{"schema with a quote", testDSN(), Options{Schema: `bad"schema`}, ErrInvalid},
		{"schema in upper case", testDSN(), Options{Schema: "Rank"}, ErrInvalid},
		{"unparsable DSN", "postgres://%zz", Options{Schema: "t_x"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := Open(t.Context(), tc.dsn, tc.opts)
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
	t.Run("metrics registered and unregistered", func(t *testing.T) {
		t.Parallel()
		schema := randomSchema(t)
		dropSchemaAtCleanup(t, schema)
		reg := prometheus.NewRegistry()
		l, err := Open(t.Context(), testDSN(), Options{Schema: schema, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Record(t.Context(), sumEv("e1", "f", "u1", 1), sumTie); err != nil {
			t.Fatal(err)
		}
		// A group's transaction observes its stages (acquire, statements, commit).
		if _, err := l.RecordGroup(t.Context(), []GroupEvent{{Event: sumEv("e2", "f", "u1", 1), Rules: sumTie},
			{Event: sumEv("e3", "f", "u2", 1), Rules: sumTie}}); err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		values := map[string]float64{}
		stages := map[string]uint64{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
			for _, m := range mf.GetMetric() {
				values[mf.GetName()] += m.GetGauge().GetValue() + m.GetCounter().GetValue()
				if mf.GetName() == "rankgate_ledger_tx_stage_seconds" {
					var op, stage string
					for _, lp := range m.GetLabel() {
						switch lp.GetName() {
						case "op":
							op = lp.GetValue()
						case "stage":
							stage = lp.GetValue()
						}
					}
					stages[op+"/"+stage] += m.GetHistogram().GetSampleCount()
				}
			}
		}
		for _, st := range []string{"acquire", "statements", "commit"} {
			if n := stages["record_group/"+st]; n != 1 {
				t.Errorf("rankgate_ledger_tx_stage_seconds{op=record_group,stage=%s} observed %d times, want 1 (all: %v)", st, n, stages)
			}
		}
		for _, n := range []string{"rankgate_ledger_writes_total", "rankgate_ledger_tx_duration_seconds", "rankgate_ledger_connections"} {
			if !names[n] {
				t.Errorf("metric %s not gathered (have %v)", n, names)
			}
		}
		// The pool's statistics (pgxpool.Stat).
		for n, ok := range map[string]func(float64) bool{
			"rankgate_ledger_connections_max":            func(v float64) bool { return v == 10 },
			"rankgate_ledger_connections":                func(v float64) bool { return v >= 1 && v <= 10 },
			"rankgate_ledger_pool_acquires_total":        func(v float64) bool { return v >= 2 }, // migrate, record
			"rankgate_ledger_pool_new_connections_total": func(v float64) bool { return v >= 1 },
		} {
			if v, seen := values[n]; !seen || !ok(v) {
				t.Errorf("metric %s = %v (gathered: %v)", n, v, seen)
			}
		}
		if _, err := Open(t.Context(), testDSN(), Options{Schema: schema, Registerer: reg}); err == nil {
			t.Error("a second ledger on the same registry registered its metrics twice")
		}
		l.Close()
		if err := l.Ping(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Ping after Close = %v, want ErrClosed", err)
		}
		l2, err := Open(t.Context(), testDSN(), Options{Schema: schema, Registerer: reg})
		if err != nil {
			t.Fatalf("Open after Close on the same registry: %v", err)
		}
		l2.Close()
	})
}

// stageCount is how many attempts of op observed stage.
func stageCount(t *testing.T, l *Ledger, op, stage string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := l.m.txStage.WithLabelValues(op, stage).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// startedCtx is a context that reports the first time its Done channel is
// asked for: a pool's acquire asks for it once it started (the ledger checks
// Err before it, never Done), so the context can be ended during the acquire
// without a timer.
type startedCtx struct {
	context.Context
	once    sync.Once
	started chan struct{}
}

func (c *startedCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.started) })
	return c.Context.Done()
}

// Every attempt of a group's transaction observes the stages it reached,
// failed or not, so a retried transaction's first try shows in
// rankgate_ledger_tx_stage_seconds too; an acquire that waited for nothing
// (a context done before it, a closed ledger) observes nothing.
func TestTxStagesObserveFailedAttempts(t *testing.T) {
	t.Parallel()
	needDB(t)
	group := []GroupEvent{{Event: sumEv("e1", "f", "u1", 1), Rules: sumTie}, {Event: sumEv("e2", "f", "u2", 1), Rules: sumTie}}
	tests := []struct {
		name     string
		maxConns int // the pool's size (0: openTest's)
		// run records what the case needs and returns RecordGroup's error.
		run       func(t *testing.T, l *Ledger) error
		wantErr   error
		twoTrips  float64 // record_group_two_trips retries
		wantStage map[string]uint64
	}{
		{
			// A recorded event in the group: the one round trip's statements
			// fail (errTwoTrips, rolled back), the second attempt commits.
			name: "statements of a rolled back first try",
			run: func(t *testing.T, l *Ledger) error {
				if _, err := l.Record(t.Context(), sumEv("e1", "f", "u1", 1), sumTie); err != nil {
					t.Fatal(err)
				}
				_, err := l.RecordGroup(t.Context(), []GroupEvent{{Event: sumEv("e1", "f", "u1", 1), Rules: sumTie},
					{Event: sumEv("e2", "f", "u2", 1), Rules: sumTie}})
				return err
			},
			twoTrips:  1,
			wantStage: map[string]uint64{"acquire": 2, "statements": 2, "commit": 1},
		},
		{
			// The context was done before the acquire: the pool refuses the
			// connection at once, a wait of nothing.
			name: "acquire of a cancelled caller",
			run: func(t *testing.T, l *Ledger) error {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				_, err := l.RecordGroup(ctx, group)
				return err
			},
			wantErr:   context.Canceled,
			wantStage: map[string]uint64{"acquire": 0, "statements": 0, "commit": 0},
		},
		{
			// A closed ledger refuses the connection at once.
			name: "acquire of a closed ledger",
			run: func(t *testing.T, l *Ledger) error {
				l.Close()
				_, err := l.RecordGroup(t.Context(), group)
				return err
			},
			wantErr:   ErrClosed,
			wantStage: map[string]uint64{"acquire": 0, "statements": 0, "commit": 0},
		},
		{
			// The pool's one connection is held: the acquire waits until its
			// context ends (cancelled once the acquire started), a real if
			// truncated wait.
			name:     "acquire cut off while waiting",
			maxConns: 1,
			run: func(t *testing.T, l *Ledger) error {
				held, err := l.pool.acquire(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer held.Release()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				sc := &startedCtx{Context: ctx, started: make(chan struct{})}
				go func() {
					select {
					case <-sc.started:
						cancel()
					case <-ctx.Done():
					}
				}()
				_, err = l.RecordGroup(sc, group)
				return err
			},
			wantErr:   context.Canceled,
			wantStage: map[string]uint64{"acquire": 1, "statements": 0, "commit": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := openTestConns(t, cmp.Or(tc.maxConns, 8))
			if err := tc.run(t, l); !errors.Is(err, tc.wantErr) {
				t.Fatalf("RecordGroup: %v, want %v", err, tc.wantErr)
			}
			if n := counter(t, l, "record_group_two_trips"); n != tc.twoTrips {
				t.Errorf("record_group_two_trips retries = %v, want %v", n, tc.twoTrips)
			}
			for stage, want := range tc.wantStage {
				if n := stageCount(t, l, "record_group", stage); n != want {
					t.Errorf("rankgate_ledger_tx_stage_seconds{op=record_group,stage=%s} observed %d times, want %d", stage, n, want)
				}
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ev         Event
		r          Rules
		projection bool
		wantKind   string
		wantErr    bool
	}{
		{"award", sumEv("e", "f", "u", 1), sumTie, false, KindAward, false},
		{"reversal inferred", Event{EventID: "r", Family: "f", Member: "u", Reverses: "e"}, sumTie, false, KindReversal, false},
		{"projection inferred", projEv("f", "u", 1, 5), sumTie, true, KindProjection, false},
		{"no event id", sumEv("", "f", "u", 1), sumTie, false, "", true},
		{"no member", sumEv("e", "f", "", 1), sumTie, false, "", true},
		{"no boards", Event{EventID: "e", Family: "f", Period: "p", Member: "u", Delta: ptr(1)}, sumTie, false, "", true},
		{"repeated board", sumEv("e", "f", "u", 1, "national", "national"), sumTie, false, "", true},
		{"no period", Event{EventID: "e", Family: "f", Member: "u", Boards: []string{"national"}, Delta: ptr(1)}, sumTie, false, "", true},
		{"value in a sum family", valEv("e", "f", "u", 1), sumTie, false, "", true},
		{"delta in a max family", sumEv("e", "f", "u", 1), maxTie, false, "", true},
		{"correction without operator", func() Event { e := sumEv("e", "f", "u", 1); e.Kind = KindCorrection; return e }(), sumTie, false, "", true},
		{"reversal of itself", revEv("r", "f", "u", "r"), sumTie, false, "", true},
		{"reversal with a delta", func() Event { e := revEv("r", "f", "u", "e"); e.Delta = ptr(1); return e }(), sumTie, false, "", true},
		{"award that reverses", func() Event { e := sumEv("e", "f", "u", 1); e.Reverses = "x"; return e }(), sumTie, false, "", true},
		{"projection through Record", projEv("f", "u", 1, 5), sumTie, false, "", true},
		{"award through Project", sumEv("e", "f", "u", 1), sumTie, true, "", true},
		{"projection without version", projEv("f", "u", 0, 5), sumTie, true, "", true},
		{"unknown kind", func() Event { e := sumEv("e", "f", "u", 1); e.Kind = "bonus"; return e }(), sumTie, false, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := normalize(tc.ev, tc.r, tc.projection)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tc.wantKind || ev.EventID == "" || ev.ReceivedAt.IsZero() || ev.OccurredAt.IsZero() {
				t.Errorf("normalized = %+v", ev)
			}
		})
	}
	rules := []struct {
		name string
		r    Rules
	}{
		{"bad aggregate", Rules{Aggregate: "avg"}},
		{"tie first without capacity", Rules{TieFirst: true}},
	}
	for _, tc := range rules {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tc.r.check(); !errors.Is(err, ErrInvalid) {
				t.Errorf("check = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	boards := []string{"national", "province:zj"}

	t.Run("replay answers the stored totals", func(t *testing.T) {
		t.Parallel()
		first, err := l.Record(ctx, sumEv("d1", "dup", "u1", 5, boards...), sumTie)
		if err != nil {
			t.Fatal(err)
		}
		if first.Duplicate || len(first.Boards) != 2 || first.Boards[0].Points != 5 || first.Boards[1].Points != 5 {
			t.Fatalf("first = %+v", first)
		}
		// A later change, then the replay: the current totals, nothing applied.
		if _, err := l.Record(ctx, sumEv("d2", "dup", "u1", 2, "national"), sumTie); err != nil {
			t.Fatal(err)
		}
		// The replay names the boards in another order and a different delta:
		// the stored event wins, answered in the caller's board order.
		replay := sumEv("d1", "dup", "u1", 100, "province:zj", "national")
		got, err := l.Record(ctx, replay, sumTie)
		if err != nil {
			t.Fatal(err)
		}
		want := Outcome{Duplicate: true, Boards: []BoardTotal{
			{Board: "province:zj", Points: 5, Version: 1, Seq: 1, Present: true},
			{Board: "national", Points: 7, Version: 2, Seq: 2, Present: true},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("replay = %+v, want %+v", got, want)
		}
		if n := queryInt(t, l, `SELECT count(*) FROM event_boards WHERE event_id = 'dup.d1'`); n != 2 {
			t.Errorf("event_boards rows of d1 = %d, want 2", n)
		}
	})

	t.Run("twenty concurrent records of one id apply once", func(t *testing.T) {
		t.Parallel()
		const n = 20
		outs := make([]Outcome, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { outs[i], errs[i] = l.Record(ctx, sumEv("c1", "dupc", "u1", 7, boards...), sumTie) })
		}
		wg.Wait()
		applied := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("record %d: %v", i, errs[i])
			}
			if !outs[i].Duplicate {
				applied++
			}
			for _, b := range outs[i].Boards {
				if b.Points != 7 || b.Version != 1 {
					t.Errorf("record %d: board %+v, want 7 points at version 1", i, b)
				}
			}
		}
		if applied != 1 {
			t.Errorf("applied %d times, want 1", applied)
		}
		for _, b := range boards {
			if got, err := l.Total(ctx, "dupc", testPeriod, b, "u1"); err != nil || got.Points != 7 || got.Version != 1 {
				t.Errorf("Total %s = %+v, %v", b, got, err)
			}
		}
		if n := queryInt(t, l, `SELECT count(*) FROM events WHERE family = 'dupc'`); n != 1 {
			t.Errorf("events = %d, want 1", n)
		}
	})
}

func TestConcurrentSameMember(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	const n = 100
	boards := []string{"class:c1", "national", "province:zj"}
	outs := make([]Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			outs[i], errs[i] = l.Record(ctx, sumEv(fmt.Sprintf("e%03d", i), "conc", "u1", 1, boards...), sumTie)
		})
	}
	wg.Wait()
	versions := map[int64]bool{}
	seqs := map[int64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("record %d: %v", i, errs[i])
		}
		o := outs[i]
		if o.Duplicate || len(o.Boards) != 3 {
			t.Fatalf("record %d: %+v", i, o)
		}
		for _, b := range o.Boards {
			// One transaction per event: every board moved together.
			if b.Version != o.Boards[0].Version || b.Points != b.Version || b.Seq != o.Boards[0].Seq {
				t.Errorf("record %d: boards disagree: %+v", i, o.Boards)
			}
		}
		versions[o.Boards[0].Version] = true
		seqs[o.Boards[0].Seq] = true
	}
	for v := int64(1); v <= n; v++ {
		if !versions[v] || !seqs[v] {
			t.Errorf("version or seq %d missing (versions %d distinct, seqs %d distinct)", v, len(versions), len(seqs))
			break
		}
	}
	for _, b := range boards {
		got, err := l.Total(ctx, "conc", testPeriod, b, "u1")
		if err != nil || got.Points != n || got.Version != n || !got.Present {
			t.Errorf("Total %s = %+v, %v; want %d points at version %d", b, got, err, n, n)
		}
	}
}

func TestSeqFollowsCommitOrder(t *testing.T) {
	t.Parallel()
	needDB(t)

	t.Run("a later transaction waits for the seq holder", func(t *testing.T) {
		t.Parallel()
		l := openTest(t)
		ctx := t.Context()
		reached, release := make(chan struct{}), make(chan struct{})
		l.beforeCommit = func(op, id string) {
			if id == "seq.slow" {
				close(reached)
				<-release
			}
		}
		type result struct {
			out Outcome
			err error
		}
		slow, fast := make(chan result, 1), make(chan result, 1)
		go func() {
			o, err := l.Record(ctx, sumEv("slow", "seq", "a", 1), sumTie)
			slow <- result{o, err}
		}()
		<-reached
		go func() {
			o, err := l.Record(ctx, sumEv("fast", "seq", "b", 1), sumTie)
			fast <- result{o, err}
		}()
		// Wait (bounded) until "fast" blocks on a lock held by "slow".
		soon.Eventually(t, 10*time.Second, func() error {
			if queryInt(t, l, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
				"rankgate-ledger/"+l.Schema()) == 0 {
				return errors.New("the second transaction never waited for the first")
			}
			return nil
		})
		select {
		case r := <-fast:
			t.Fatalf("fast committed while slow held its seq: %+v %v", r.out, r.err)
		default:
		}
		close(release)
		rs, rf := <-slow, <-fast
		if rs.err != nil || rf.err != nil {
			t.Fatalf("errors: %v, %v", rs.err, rf.err)
		}
		if s, f := rs.out.Boards[0].Seq, rf.out.Boards[0].Seq; s != 1 || f != 2 {
			t.Errorf("seqs slow=%d fast=%d, want 1 and 2", s, f)
		}
	})

	t.Run("seqs of concurrent events follow commit order", func(t *testing.T) {
		t.Parallel()
		l := openTest(t)
		ctx := t.Context()
		var mu sync.Mutex
		var order []string // event ids in the order they reached COMMIT, seq lock held
		l.beforeCommit = func(op, id string) {
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
		}
		const n = 50
		seqOf := make(map[string]int64, n)
		var wg sync.WaitGroup
		var smu sync.Mutex
		for i := range n {
			wg.Go(func() {
				ev := sumEv(fmt.Sprintf("e%02d", i), "seqc", fmt.Sprintf("u%02d", i%7), 1)
				id := ev.EventID
				o, err := l.Record(ctx, ev, sumTie)
				if err != nil {
					t.Error(err)
					return
				}
				smu.Lock()
				seqOf[id] = o.Boards[0].Seq
				smu.Unlock()
			})
		}
		wg.Wait()
		if len(order) != n {
			t.Fatalf("%d commits seen, want %d", len(order), n)
		}
		for i, id := range order {
			if seqOf[id] != int64(i+1) {
				t.Fatalf("commit #%d (%s) has seq %d, want %d", i+1, id, seqOf[id], i+1)
			}
		}
	})
}

// step is one write of a scenario and what it must answer on board "national".
type step struct {
	ev      Event
	want    BoardTotal
	dup     bool
	wantErr error
}

func runSteps(t *testing.T, l *Ledger, r Rules, steps []step) {
	t.Helper()
	for i, s := range steps {
		var out Outcome
		var err error
		if s.ev.Kind == KindProjection {
			out, err = l.Project(t.Context(), s.ev, r)
		} else {
			out, err = l.Record(t.Context(), s.ev, r)
		}
		if s.wantErr != nil {
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("step %d (%s): err = %v, want %v", i, s.ev.EventID, err, s.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.ev.EventID, err)
		}
		if out.Duplicate != s.dup || len(out.Boards) != 1 || !reflect.DeepEqual(out.Boards[0], s.want) {
			t.Fatalf("step %d (%s): got %+v, want duplicate=%v %+v", i, s.ev.EventID, out, s.dup, s.want)
		}
	}
}

func TestReversalSum(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	tests := []struct {
		name  string
		r     Rules
		steps func(f string) []step
	}{
		{"only event reversed leaves the board", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 1, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(0, 2, -1, false, true)},
			}
		}},
		{"latest reversed restores the seq before it", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 1, true, true)},
				{ev: sumEv("a2", f, "m", 5), want: bt(15, 2, 2, true, true)},
				{ev: revEv("r1", f, "m", "a2"), want: bt(10, 3, 1, true, true)},
			}
		}},
		{"earlier reversed reaches the total now", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 1, true, true)},
				{ev: sumEv("a2", f, "m", 5), want: bt(15, 2, 2, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(5, 3, 3, true, true)},
			}
		}},
		{"another member's change in between", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 1, true, true)},
				{ev: sumEv("b1", f, "other", 7), want: bt(7, 1, 2, true, true)},
				{ev: sumEv("a2", f, "m", 5), want: bt(15, 2, 3, true, true)},
				{ev: revEv("r1", f, "m", "a2"), want: bt(10, 3, 1, true, true)},
				{ev: revEv("r2", f, "m", "a1"), want: bt(0, 4, -1, false, true)},
			}
		}},
		{"back at zero with another live change stays", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 1, true, true)},
				{ev: sumEv("a2", f, "m", -10), want: bt(0, 2, 2, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(-10, 3, 3, true, true)},
				{ev: revEv("r2", f, "m", "a2"), want: bt(0, 4, -1, false, true)},
			}
		}},
		{"removed then back", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 5), want: bt(5, 1, 1, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(0, 2, -1, false, true)},
				{ev: sumEv("a2", f, "m", 3), want: bt(3, 3, 2, true, true)},
				{ev: revEv("r2", f, "m", "a2"), want: bt(0, 4, -1, false, true)},
			}
		}},
		{"reversal twice is a duplicate", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 5), want: bt(5, 1, 1, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(0, 2, -1, false, true)},
				{ev: revEv("r1", f, "m", "a1"), dup: true, want: bt(0, 2, -1, false, false)},
				{ev: revEv("r2", f, "m", "a1"), dup: true, want: bt(0, 2, -1, false, false)},
			}
		}},
		{"unknown event", sumTie, func(f string) []step {
			return []step{{ev: revEv("r1", f, "m", "nope"), wantErr: ErrUnknownEvent}}
		}},
		{"another member's event is unknown", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 5), want: bt(5, 1, 1, true, true)},
				{ev: revEv("r1", f, "x", "a1"), wantErr: ErrUnknownEvent},
			}
		}},
		{"another period's event is unknown", sumTie, func(f string) []step {
			r := revEv("r1", f, "m", "a1")
			r.Period = "2026-W35"
			return []step{
				{ev: sumEv("a1", f, "m", 5), want: bt(5, 1, 1, true, true)},
				{ev: r, wantErr: ErrUnknownEvent},
			}
		}},
		{"unknown on every board named", sumTie, func(f string) []step {
			r := revEv("r1", f, "m", "a1")
			r.Boards = []string{"province:zj"}
			return []step{
				{ev: sumEv("a1", f, "m", 5), want: bt(5, 1, 1, true, true)},
				{ev: r, wantErr: ErrUnknownEvent},
			}
		}},
		{"a reversal is not reversible", sumTie, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 5), want: bt(5, 1, 1, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(0, 2, -1, false, true)},
				{ev: revEv("r2", f, "m", "r1"), wantErr: ErrNotReversible},
			}
		}},
		{"tie member: earlier reversed", sumMember, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 0, true, true)},
				{ev: sumEv("a2", f, "m", 5), want: bt(15, 2, 0, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(5, 3, 0, true, true)},
			}
		}},
		{"tie member: only event reversed", sumMember, func(f string) []step {
			return []step{
				{ev: sumEv("a1", f, "m", 10), want: bt(10, 1, 0, true, true)},
				{ev: revEv("r1", f, "m", "a1"), want: bt(0, 2, -1, false, true)},
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := fmt.Sprintf("rev%02d", i)
			runSteps(t, l, tc.r, tc.steps(f))
		})
	}

	t.Run("the original names its reversal; a no-op reversal keeps nothing", func(t *testing.T) {
		t.Parallel()
		runSteps(t, l, sumTie, []step{
			{ev: sumEv("k1", "revk", "m", 5, "national"), want: bt(5, 1, 1, true, true)},
			{ev: revEv("k2", "revk", "m", "k1"), want: bt(0, 2, -1, false, true)},
			{ev: revEv("k3", "revk", "m", "k1"), dup: true, want: bt(0, 2, -1, false, false)},
		})
		if n := queryInt(t, l, `SELECT count(*) FROM events WHERE event_id = 'revk.k1' AND reversed_by = 'revk.k2'`); n != 1 {
			t.Error("k1 is not marked reversed by k2")
		}
		if n := queryInt(t, l, `SELECT count(*) FROM events WHERE event_id = 'revk.k3'`); n != 0 {
			t.Error("the no-op reversal k3 was kept")
		}
	})

	t.Run("answers follow the boards named", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		if _, err := l.Record(ctx, sumEv("n1", "revn", "m", 4, "national"), sumTie); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Record(ctx, sumEv("n2", "revn", "other", 9, "class:c1"), sumTie); err != nil {
			t.Fatal(err)
		}
		r := revEv("n3", "revn", "m", "n1")
		r.Boards = []string{"province:zj", "national"}
		want := Outcome{Boards: []BoardTotal{
			{Board: "province:zj", Seq: -1},
			{Board: "national", Points: 0, Version: 2, Seq: -1, Present: false, Changed: true},
		}}
		got, err := l.Record(ctx, r, sumTie)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("reversal = %+v, %v; want %+v", got, err, want)
		}
		// A replay answers the boards it names, in its order.
		want.Duplicate = true
		want.Boards[1].Changed = false
		if got, err := l.Record(ctx, r, sumTie); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("replay = %+v, %v; want %+v", got, err, want)
		}
		if n := queryInt(t, l, `SELECT count(*) FROM totals WHERE family = 'revn' AND board = 'province:zj'`); n != 0 {
			t.Errorf("a board the original never touched got %d totals rows", n)
		}
	})

	t.Run("reversal on every board of the original", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		if _, err := l.Record(ctx, sumEv("w1", "revw", "m", 4, "national", "province:zj"), sumTie); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Record(ctx, sumEv("w2", "revw", "m", 6, "national"), sumTie); err != nil {
			t.Fatal(err)
		}
		r := revEv("w3", "revw", "m", "w1")
		r.Period = "" // the original's period
		got, err := l.Record(ctx, r, sumTie)
		if err != nil {
			t.Fatal(err)
		}
		want := Outcome{Boards: []BoardTotal{
			{Board: "national", Points: 6, Version: 3, Seq: 3, Present: true, Changed: true},
			{Board: "province:zj", Points: 0, Version: 2, Seq: -1, Present: false, Changed: true},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reversal = %+v, want %+v", got, want)
		}
	})
}

func TestMaxMin(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	tests := []struct {
		name  string
		r     Rules
		steps func(f string) []step
	}{
		{"max keeps the best and recomputes on reversal", maxTie, func(f string) []step {
			return []step{
				{ev: valEv("m1", f, "u", 10), want: bt(10, 1, 1, true, true)},
				{ev: valEv("m2", f, "u", 8), want: bt(10, 1, 1, true, false)},
				{ev: valEv("m3", f, "u", 12), want: bt(12, 2, 2, true, true)},
				{ev: valEv("m4", f, "u", 12), want: bt(12, 2, 2, true, false)}, // equal is no improvement
				// The best stands through m4, reached only now: a new seq.
				{ev: revEv("r3", f, "u", "m3"), want: bt(12, 3, 3, true, true)},
				// Back to m1's 10, first reached at m1's seq.
				{ev: revEv("r4", f, "u", "m4"), want: bt(10, 4, 1, true, true)},
				// m2's 8 never improved anything: reached now.
				{ev: revEv("r1", f, "u", "m1"), want: bt(8, 5, 4, true, true)},
				{ev: revEv("r2", f, "u", "m2"), want: bt(0, 6, -1, false, true)},
				{ev: revEv("r2b", f, "u", "m2"), dup: true, want: bt(0, 6, -1, false, false)},
			}
		}},
		{"min keeps the lowest", minTie, func(f string) []step {
			return []step{
				{ev: valEv("n1", f, "u", 50), want: bt(50, 1, 1, true, true)},
				{ev: valEv("n2", f, "u", 60), want: bt(50, 1, 1, true, false)},
				{ev: valEv("n3", f, "u", 40), want: bt(40, 2, 2, true, true)},
				// Not the source of the best: the best and its seq stand.
				{ev: revEv("r1", f, "u", "n1"), want: bt(40, 3, 2, true, true)},
				{ev: revEv("r3", f, "u", "n3"), want: bt(60, 4, 3, true, true)},
				{ev: valEv("n4", f, "u", 55), want: bt(55, 5, 4, true, true)},
			}
		}},
		{"max under tie member", maxMember, func(f string) []step {
			return []step{
				{ev: valEv("x1", f, "u", 10), want: bt(10, 1, 0, true, true)},
				{ev: valEv("x2", f, "u", 20), want: bt(20, 2, 0, true, true)},
				{ev: revEv("r2", f, "u", "x2"), want: bt(10, 3, 0, true, true)},
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, l, tc.r, tc.steps(fmt.Sprintf("best%02d", i)))
		})
	}
}

func TestOutOfRange(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()

	t.Run("points beyond max roll back every board", func(t *testing.T) {
		t.Parallel()
		r := sumTie
		r.MaxPoints = 100
		if _, err := l.Record(ctx, sumEv("p1", "oor", "u", 90, "province:zj"), r); err != nil {
			t.Fatal(err)
		}
		_, err := l.Record(ctx, sumEv("x", "oor", "u", 20, "national", "province:zj"), r)
		if !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("err = %v, want ErrOutOfRange", err)
		}
		if n := queryInt(t, l, `SELECT count(*) FROM events WHERE event_id = 'oor.x'`); n != 0 {
			t.Error("the refused event was kept")
		}
		if n := queryInt(t, l, `SELECT count(*) FROM event_boards WHERE event_id = 'oor.x'`); n != 0 {
			t.Error("the refused event's boards were kept")
		}
		if got, _ := l.Total(ctx, "oor", testPeriod, "national", "u"); got.Present || got.Version != 0 {
			t.Errorf("national after refusal = %+v, want untouched", got)
		}
		// The seq the refused event took was rolled back with it.
		got, err := l.Record(ctx, sumEv("y", "oor", "u", 1, "national", "province:zj"), r)
		if err != nil {
			t.Fatal(err)
		}
		want := []BoardTotal{
			{Board: "national", Points: 1, Version: 1, Seq: 2, Present: true, Changed: true},
			{Board: "province:zj", Points: 91, Version: 2, Seq: 2, Present: true, Changed: true},
		}
		if !reflect.DeepEqual(got.Boards, want) {
			t.Errorf("next event = %+v, want %+v", got.Boards, want)
		}
		// The refused id is free: a corrected retry applies.
		if _, err := l.Record(ctx, sumEv("x", "oor", "u", 5, "national", "province:zj"), r); err != nil {
			t.Errorf("retry of the refused id: %v", err)
		}
	})

	t.Run("seq capacity", func(t *testing.T) {
		t.Parallel()
		r := sumTie
		r.SeqCapacity = 3 // seqs 1 and 2
		for i, wantErr := range []error{nil, nil, ErrOutOfRange} {
			_, err := l.Record(ctx, sumEv(fmt.Sprintf("s%d", i), "cap", fmt.Sprintf("u%d", i), 1), r)
			if !errors.Is(err, wantErr) {
				t.Fatalf("event %d: err = %v, want %v", i, err, wantErr)
			}
		}
		if n := queryInt(t, l, `SELECT count(*) FROM events WHERE family = 'cap'`); n != 2 {
			t.Errorf("events = %d, want 2", n)
		}
		// A max event that improves nothing needs no seq.
		if _, err := l.Record(ctx, valEv("v1", "capm", "u", 5), Rules{Aggregate: "max", TieFirst: true, SeqCapacity: 2}); err != nil {
			t.Fatal(err)
		}
		o, err := l.Record(ctx, valEv("v2", "capm", "u", 4), Rules{Aggregate: "max", TieFirst: true, SeqCapacity: 2})
		if err != nil || o.Boards[0].Changed {
			t.Errorf("non-improving event at capacity = %+v, %v", o, err)
		}
	})
}

func TestPeriods(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	if _, err := l.Record(ctx, sumEv("a1", "per", "u", 5), sumTie); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if st, err := l.Freeze(ctx, "per", testPeriod); err != nil || st != StateFrozen {
			t.Fatalf("Freeze = %q, %v", st, err)
		}
	}
	tests := []struct {
		name    string
		write   func() (Outcome, error)
		wantErr error
		dup     bool
	}{
		{"a new event is refused", func() (Outcome, error) { return l.Record(ctx, sumEv("a2", "per", "u", 1), sumTie) }, ErrPeriodClosed, false},
		{"a reversal is refused", func() (Outcome, error) { return l.Record(ctx, revEv("r1", "per", "u", "a1"), sumTie) }, ErrPeriodClosed, false},
		{"a projection is refused", func() (Outcome, error) { return l.Project(ctx, projEv("per", "u", 9, 1), sumTie) }, ErrPeriodClosed, false},
		{"a retry of an event applied before is a duplicate", func() (Outcome, error) { return l.Record(ctx, sumEv("a1", "per", "u", 5), sumTie) }, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.write()
			if !errors.Is(err, tc.wantErr) || out.Duplicate != tc.dup {
				t.Fatalf("got %+v, %v; want err %v duplicate %v", out, err, tc.wantErr, tc.dup)
			}
		})
	}
	if n := queryInt(t, l, `SELECT count(*) FROM events WHERE family = 'per'`); n != 1 {
		t.Errorf("events = %d, want 1", n)
	}
	states := []struct {
		name, family, period, want string
	}{
		{"frozen", "per", testPeriod, StateFrozen},
		{"never seen is open", "per", "2026-W35", StateOpen},
	}
	for _, tc := range states {
		if st, err := l.State(ctx, tc.family, tc.period); err != nil || st != tc.want {
			t.Errorf("%s: State = %q, %v; want %q", tc.name, st, err, tc.want)
		}
	}
	if _, err := l.SetArchived(ctx, "per", testPeriod); !errors.Is(err, ErrNotSettled) {
		t.Errorf("SetArchived of a frozen period = %v, want ErrNotSettled", err)
	}
	if _, err := l.Settle(ctx, "per", testPeriod, 10, []string{"national"}, true, sumTie); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if st, err := l.SetArchived(ctx, "per", testPeriod); err != nil || st != StateArchived {
			t.Errorf("SetArchived = %q, %v", st, err)
		}
	}
	if st, err := l.Freeze(ctx, "per", testPeriod); err != nil || st != StateArchived {
		t.Errorf("Freeze of an archived period = %q, %v; want archived kept", st, err)
	}
}

func TestProjection(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	stale := projEv("proj", "u", 1, 999)
	stale.EventID = "other-id-v1"
	runSteps(t, l, sumTie, []step{
		{ev: projEv("proj", "u", 1, 100), want: bt(100, 1, 1, true, true)},
		{ev: projEv("proj", "u", 1, 100), dup: true, want: bt(100, 1, 1, true, false)},
		{ev: stale, want: bt(100, 1, 1, true, false)},
		{ev: projEv("proj", "u", 3, 300), want: bt(300, 3, 2, true, true)},
		{ev: projEv("proj", "u", 2, 200), want: bt(300, 3, 2, true, false)},
		// Same points, newer version: the version moves, the seq stays.
		{ev: projEv("proj", "u", 4, 300), want: bt(300, 4, 2, true, true)},
		{ev: projEv("proj", "u", 5, 2_000_000), wantErr: ErrOutOfRange},
	})
}

func TestSettle(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	type entry struct {
		member string
		points int64
	}
	st := func(member string, points, position, rank int64) Standing {
		return Standing{Member: member, Points: points, Position: position, Rank: rank}
	}
	// Recorded in this order (seq order under tie first).
	desc := []entry{{"a", 100}, {"b", 90}, {"c", 90}, {"d", 80}, {"e", 70}}
	tests := []struct {
		name    string
		r       Rules
		comp    bool
		entries []entry
		top     int
		want    []Standing
	}{
		{"competition, tie member", sumMember, true, desc, 4,
			[]Standing{st("a", 100, 0, 1), st("c", 90, 1, 2), st("b", 90, 2, 2), st("d", 80, 3, 4)}},
		{"ordinal, tie member", sumMember, false, desc, 4,
			[]Standing{st("a", 100, 0, 1), st("c", 90, 1, 2), st("b", 90, 2, 3), st("d", 80, 3, 4)}},
		{"competition, tie first", sumTie, true, desc, 4,
			[]Standing{st("a", 100, 0, 1), st("b", 90, 1, 2), st("c", 90, 2, 2), st("d", 80, 3, 4)}},
		{"ordinal, tie first", sumTie, false, desc, 3,
			[]Standing{st("a", 100, 0, 1), st("b", 90, 1, 2), st("c", 90, 2, 3)}},
		{"ascending (lower is better)", minTie, true, []entry{{"a", 40}, {"b", 30}, {"c", 40}, {"d", 50}}, 10,
			[]Standing{st("b", 30, 0, 1), st("a", 40, 1, 2), st("c", 40, 2, 2), st("d", 50, 3, 4)}},
		{"a tie group cut by top", sumMember, true, []entry{{"a", 5}, {"b", 5}, {"c", 5}}, 2,
			[]Standing{st("c", 5, 0, 1), st("b", 5, 1, 1)}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := fmt.Sprintf("set%02d", i)
			for j, e := range tc.entries {
				ev := sumEv(fmt.Sprintf("e%d", j), f, e.member, e.points, "national", "province:zj")
				if tc.r.Aggregate != "sum" {
					ev = valEv(fmt.Sprintf("e%d", j), f, e.member, e.points, "national", "province:zj")
				}
				if _, err := l.Record(ctx, ev, tc.r); err != nil {
					t.Fatal(err)
				}
			}
			if tc.r.Aggregate == "sum" {
				// A member reversed off the board is not ranked.
				if _, err := l.Record(ctx, sumEv("gone", f, "zz", 1000, "national"), tc.r); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Record(ctx, revEv("gone-r", f, "zz", "gone"), tc.r); err != nil {
					t.Fatal(err)
				}
			}
			boards := []string{"national", "province:zj", "class:empty"}
			if _, err := l.Settle(ctx, f, testPeriod, tc.top, boards, tc.comp, tc.r); !errors.Is(err, ErrNotFrozen) {
				t.Fatalf("Settle of an open period = %v, want ErrNotFrozen", err)
			}
			if _, err := l.Freeze(ctx, f, testPeriod); err != nil {
				t.Fatal(err)
			}
			s, err := l.Settle(ctx, f, testPeriod, tc.top, boards, tc.comp, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []string{"national", "province:zj"} {
				got := s.Boards[b]
				for k := range got {
					got[k].Seq = 0 // compared separately
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s standings = %+v, want %+v", b, got, tc.want)
				}
			}
			if got, ok := s.Boards["class:empty"]; !ok || len(got) != 0 {
				t.Errorf("empty board = %v, %v; want present and empty", got, ok)
			}
			if st, _ := l.State(ctx, f, testPeriod); st != StateSettled {
				t.Errorf("state = %q, want settled", st)
			}
			// Re-run with other arguments: the stored settlement, unchanged.
			s1, _, _ := l.Settlement(ctx, f, testPeriod)
			again, err := l.Settle(ctx, f, testPeriod, tc.top+5, []string{"national"}, !tc.comp, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, s1) {
				t.Errorf("re-run = %+v, want the stored %+v", again, s1)
			}
			awards, err := l.Outbox(ctx, f, testPeriod)
			if err != nil {
				t.Fatal(err)
			}
			if len(awards) != 2*len(tc.want) {
				t.Fatalf("outbox has %d awards, want %d", len(awards), 2*len(tc.want))
			}
			for _, a := range awards {
				if a.IdempotencyKey != IdempotencyKey(f, testPeriod, a.Board, a.Member) || !a.DeliveredAt.IsZero() {
					t.Errorf("award %+v", a)
				}
			}
			// The period.settled notice counts the awards the settlement queued.
			var payload []byte
			if err := l.withConn(ctx, func(c *pgx.Conn) error {
				return c.QueryRow(ctx, `SELECT payload FROM notices WHERE kind = $1 AND family = $2 AND period = $3`,
					NoticeSettled, f, testPeriod).Scan(&payload)
			}); err != nil {
				t.Fatalf("reading the settled notice: %v", err)
			}
			var notice struct {
				Awards *int `json:"awards"`
			}
			if err := json.Unmarshal(payload, &notice); err != nil || notice.Awards == nil || *notice.Awards != len(awards) {
				t.Errorf("settled notice %s: awards want %d (%v)", payload, len(awards), err)
			}
		})
	}

	t.Run("concurrent settlements settle once", func(t *testing.T) {
		t.Parallel()
		f := "setc"
		for i := range 30 {
			if _, err := l.Record(ctx, sumEv(fmt.Sprintf("e%d", i), f, fmt.Sprintf("u%02d", i), int64(i%7)), sumTie); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Freeze(ctx, f, testPeriod); err != nil {
			t.Fatal(err)
		}
		const n = 8
		res := make([]Settlement, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { res[i], errs[i] = l.Settle(ctx, f, testPeriod, 10, []string{"national"}, true, sumTie) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("settle %d: %v", i, errs[i])
			}
			if !reflect.DeepEqual(res[i], res[0]) {
				t.Errorf("settle %d differs: %+v vs %+v", i, res[i], res[0])
			}
		}
		if len(res[0].Boards["national"]) != 10 {
			t.Errorf("standings = %d, want 10", len(res[0].Boards["national"]))
		}
		if got := queryInt(t, l, `SELECT count(*) FROM settlements WHERE family = $1`, f); got != 1 {
			t.Errorf("settlements = %d, want 1", got)
		}
		if got := queryInt(t, l, `SELECT count(*) FROM award_outbox WHERE family = $1`, f); got != 10 {
			t.Errorf("outbox rows = %d, want 10", got)
		}
		awards, _ := l.Outbox(ctx, f, testPeriod)
		if err := l.MarkDelivered(ctx, awards[0].IdempotencyKey); err != nil {
			t.Fatal(err)
		}
		if again, _ := l.Outbox(ctx, f, testPeriod); again[0].DeliveredAt.IsZero() || !again[1].DeliveredAt.IsZero() {
			t.Errorf("delivery not recorded: %+v", again[:2])
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			top    int
			boards []string
		}{
			{"no top", 0, []string{"national"}},
			{"no boards", 5, nil},
			{"repeated board", 5, []string{"national", "national"}},
		} {
			if _, err := l.Settle(ctx, "setx", testPeriod, tc.top, tc.boards, true, sumTie); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
			}
		}
	})
}

func TestFillRanks(t *testing.T) {
	t.Parallel()
	pts := func(ps ...int64) []Standing {
		out := make([]Standing, len(ps))
		for i, p := range ps {
			out[i].Points = p
		}
		return out
	}
	tests := []struct {
		name string
		st   []Standing
		comp bool
		want []int64
	}{
		{"competition", pts(100, 90, 90, 80), true, []int64{1, 2, 2, 4}},
		{"ordinal", pts(100, 90, 90, 80), false, []int64{1, 2, 3, 4}},
		{"all tied", pts(5, 5, 5), true, []int64{1, 1, 1}},
		{"ascending", pts(30, 40, 40, 50), true, []int64{1, 2, 2, 4}},
		{"empty", nil, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fillRanks(tc.st, tc.comp)
			var got []int64
			for i, s := range tc.st {
				if s.Position != int64(i) {
					t.Errorf("position %d = %d", i, s.Position)
				}
				got = append(got, s.Rank)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ranks = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReviews(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	ev := json.RawMessage(`{"event_id":"late-1","delta":5}`)
	id1, err := l.AddReview(ctx, Review{Family: "rv", Period: testPeriod, EventID: "late-1", Event: ev, Reason: "frozen"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.AddReview(ctx, Review{Family: "rv", Period: testPeriod, EventID: "late-1", Event: ev, Reason: "frozen"})
	if err != nil || again != id1 {
		t.Errorf("retried AddReview = %d, %v; want the first id %d", again, err, id1)
	}
	id2, err := l.AddReview(ctx, Review{Family: "rv", Period: testPeriod, Reason: "past_grace"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddReview(ctx, Review{Family: "rv", Period: "2026-W35", Reason: "past_grace"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddReview(ctx, Review{Family: "rv", Period: testPeriod, Event: json.RawMessage(`{`)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddReview of bad JSON = %v, want ErrInvalid", err)
	}

	decisions := []struct {
		name       string
		id         int64
		accept     bool
		correction string
		wantErr    error
	}{
		{"accept", id1, true, "corr-1", nil},
		{"same decision again", id1, true, "corr-1", nil},
		{"another decision", id1, false, "", ErrReviewDecided},
		{"reject", id2, false, "", nil},
		{"unknown id", 999999, true, "", ErrReviewNotFound},
	}
	for _, tc := range decisions {
		t.Run(tc.name, func(t *testing.T) {
			if err := l.DecideReview(ctx, tc.id, tc.accept, "ops@x", tc.correction); !errors.Is(err, tc.wantErr) {
				t.Errorf("DecideReview = %v, want %v", err, tc.wantErr)
			}
		})
	}
	rs, err := l.Reviews(ctx, "rv", testPeriod, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("reviews = %+v, want 2", rs)
	}
	r1, r2 := rs[0], rs[1]
	var gotEv, wantEv map[string]any
	_ = json.Unmarshal(r1.Event, &gotEv)
	_ = json.Unmarshal(ev, &wantEv)
	if r1.ID != id1 || r1.EventID != "late-1" || r1.Status != ReviewAccepted || r1.DecidedBy != "ops@x" ||
		r1.CorrectionID != "corr-1" || r1.DecidedAt.IsZero() || r1.Reason != "frozen" || !reflect.DeepEqual(gotEv, wantEv) {
		t.Errorf("review 1 = %+v", r1)
	}
	if r2.ID != id2 || r2.Status != ReviewRejected || string(r2.Event) != "{}" {
		t.Errorf("review 2 = %+v", r2)
	}
	if all, _ := l.Reviews(ctx, "rv", "", 10); len(all) != 3 {
		t.Errorf("reviews of every period = %d, want 3", len(all))
	}
}

func TestProjector(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	if _, err := l.Record(ctx, valEv("p1", "pj", "u1", 10, "national", "province:zj"), maxTie); err != nil {
		t.Fatal(err)
	}
	// Improves nothing: nothing for Redis to learn, not pending.
	if _, err := l.Record(ctx, valEv("p2", "pj", "u1", 5, "national"), maxTie); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ctx, valEv("p3", "pj", "u2", 7, "national"), maxTie); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ctx, valEv("p4", "pj", "u1", 12, "national"), maxTie); err != nil {
		t.Fatal(err)
	}
	ids := func(ps []Pending) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.EventID)
		}
		return out
	}
	got, err := l.Unprojected(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"pj.p1", "pj.p3", "pj.p4"}; !slices.Equal(ids(got), want) {
		t.Fatalf("unprojected = %v, want %v", ids(got), want)
	}
	// Current totals, not the totals at the time of the event.
	wantP1 := Pending{EventID: "pj.p1", Kind: KindAward, Family: "pj", Period: testPeriod, Member: "u1", Boards: []BoardTotal{
		{Board: "national", Points: 12, Version: 2, Seq: 3, Present: true},
		{Board: "province:zj", Points: 10, Version: 1, Seq: 1, Present: true},
	}}
	if !reflect.DeepEqual(got[0], wantP1) {
		t.Errorf("pending p1 = %+v, want %+v", got[0], wantP1)
	}
	if recent, _ := l.Unprojected(ctx, time.Hour, 10); len(recent) != 0 {
		t.Errorf("events older than an hour = %v, want none", ids(recent))
	}
	if one, _ := l.Unprojected(ctx, 0, 1); !slices.Equal(ids(one), []string{"pj.p1"}) {
		t.Errorf("limit 1 = %v", ids(one))
	}
	if err := l.MarkProjected(ctx, "pj.p1", "pj.p4", "unknown"); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Unprojected(ctx, 0, 10); !slices.Equal(ids(got), []string{"pj.p3"}) {
		t.Errorf("after MarkProjected = %v, want [p3]", ids(got))
	}
}

func TestTotals(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	members := []string{"u5", "U1", "u3", "u10", "u2"}
	for i, m := range members {
		if _, err := l.Record(ctx, sumEv(fmt.Sprintf("e%d", i), "tot", m, int64(i+1)), sumTie); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Record(ctx, sumEv("x", "tot", "u0", 1), sumTie); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ctx, revEv("xr", "tot", "u0", "x"), sumTie); err != nil {
		t.Fatal(err)
	}
	var got []string
	after := ""
	for {
		page, err := l.Totals(ctx, "tot", testPeriod, "national", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, m := range page {
			got = append(got, m.Member)
		}
		after = page[len(page)-1].Member
	}
	want := slices.Clone(members)
	sort.Strings(want) // byte order; u0 left the board
	if !slices.Equal(got, want) {
		t.Errorf("paged members = %v, want %v", got, want)
	}
	tests := []struct {
		name, member string
		want         MemberTotal
	}{
		{"present", "u3", MemberTotal{Member: "u3", Points: 3, Version: 1, Seq: 3, Present: true}},
		{"reversed away", "u0", MemberTotal{Member: "u0", Points: 0, Version: 2, Seq: -1}},
		{"never seen", "nobody", MemberTotal{Member: "nobody", Seq: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := l.Total(ctx, "tot", testPeriod, "national", tc.member)
			if err != nil {
				t.Fatal(err)
			}
			got.UpdatedAt = time.Time{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Total = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFreezeDuringWrites(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = l.Record(ctx, sumEv(fmt.Sprintf("e%02d", i), "frz", "u", 1), sumTie)
		})
	}
	var frozen error
	wg.Go(func() {
		<-start
		_, frozen = l.Freeze(ctx, "frz", testPeriod)
	})
	close(start)
	wg.Wait()
	if frozen != nil {
		t.Fatal(frozen)
	}
	applied := int64(0)
	for i, err := range errs {
		switch {
		case err == nil:
			applied++
		case !errors.Is(err, ErrPeriodClosed):
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// Every write either landed before the freeze or left no trace.
	got, err := l.Total(ctx, "frz", testPeriod, "national", "u")
	if err != nil {
		t.Fatal(err)
	}
	if got.Points != applied || got.Version != applied {
		t.Errorf("total = %+v, want %d applied", got, applied)
	}
	if rows := queryInt(t, l, `SELECT count(*) FROM events WHERE family = 'frz'`); rows != applied {
		t.Errorf("events = %d, want %d", rows, applied)
	}
	if _, err := l.Record(ctx, sumEv("late", "frz", "u", 1), sumTie); !errors.Is(err, ErrPeriodClosed) {
		t.Errorf("after Freeze: %v, want ErrPeriodClosed", err)
	}
}

// A group commits in one transaction; each event gets its own answer, a
// refused one fails alone and the events after it see the totals without it.
func TestRecordGroupMixed(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	r := sumTie
	r.MaxPoints = 100
	// Recorded before the group: a duplicate to be; a frozen period.
	if _, err := l.Record(ctx, sumEv("old", "grp", "a", 10), r); err != nil {
		t.Fatal(err)
	}
	closed := sumEv("late", "grp", "b", 1)
	closed.Period = "2026-W01"
	if _, err := l.Freeze(ctx, "grp", "2026-W01"); err != nil {
		t.Fatal(err)
	}
	bad := sumEv("bad", "grp", "a", 1)
	bad.Member = "" // invalid: refused before the transaction
	evs := []Event{
		sumEv("g1", "grp", "a", 5),   // a: 15, seq 2
		sumEv("old", "grp", "a", 99), // duplicate of a recorded event
		closed,                       // closed period
		sumEv("big", "grp", "a", 90), // 105 > 100: out of range
		sumEv("g2", "grp", "b", 7, "national", "city:x"), // b: 7, seq 3
		sumEv("g1", "grp", "a", 5),                       // duplicate within the group
		bad,                                              // invalid
		sumEv("g3", "grp", "a", 80),                      // a: 95 (fits without "big"), seq 4
	}
	items := make([]GroupEvent, len(evs))
	for i, ev := range evs {
		items[i] = GroupEvent{Event: ev, Rules: r}
	}
	res, err := l.RecordGroup(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	tot := func(board string, p, v, seq int64) BoardTotal {
		return BoardTotal{Board: board, Points: p, Version: v, Seq: seq, Present: true, Changed: true}
	}
	cases := []struct {
		name    string
		want    Outcome
		wantErr error
	}{
		{name: "fine", want: Outcome{Boards: []BoardTotal{tot("national", 15, 2, 2)}}},
		{name: "recorded duplicate answers the totals after the group", want: Outcome{Duplicate: true, Boards: []BoardTotal{{Board: "national", Points: 95, Version: 3, Seq: 4, Present: true}}}},
		{name: "closed period", wantErr: ErrPeriodClosed},
		{name: "out of range", wantErr: ErrOutOfRange},
		{name: "two boards", want: Outcome{Boards: []BoardTotal{tot("national", 7, 1, 3), tot("city:x", 7, 1, 3)}}},
		{name: "duplicate within the group", want: Outcome{Duplicate: true, Boards: []BoardTotal{{Board: "national", Points: 95, Version: 3, Seq: 4, Present: true}}}},
		{name: "invalid", wantErr: ErrInvalid},
		{name: "after a refused one", want: Outcome{Boards: []BoardTotal{tot("national", 95, 3, 4)}}},
	}
	for i, c := range cases {
		if c.wantErr != nil {
			if !errors.Is(res[i].Err, c.wantErr) {
				t.Errorf("%s: err = %v, want %v", c.name, res[i].Err, c.wantErr)
			}
			continue
		}
		if res[i].Err != nil || !reflect.DeepEqual(res[i].Outcome, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, res[i].Outcome, res[i].Err, c.want)
		}
	}
	if n := queryInt(t, l, `SELECT count(*) FROM events WHERE family = 'grp'`); n != 4 {
		t.Errorf("events = %d, want 4 (old, g1, g2, g3)", n)
	}
	if n := queryInt(t, l, `SELECT count(*) FROM events WHERE event_id IN ('grp.big', 'grp.late')`); n != 0 {
		t.Errorf("refused events kept: %d", n)
	}
	if n := queryInt(t, l, `SELECT next FROM period_seq WHERE family = 'grp'`); n != 5 {
		t.Errorf("period_seq.next = %d, want 5 (one range of three)", n)
	}
	// The event_boards rows chain: g3's seq_before is g1's seq_after.
	if n := queryInt(t, l, `SELECT seq_before FROM event_boards WHERE event_id = 'grp.g3'`); n != 2 {
		t.Errorf("g3 seq_before = %d, want 2", n)
	}
}

// Two groups writing the same ids at once: each id applies once, and every
// answer agrees with the ledger.
func TestRecordGroupConcurrentSameIDs(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	const n, writers = 40, 4
	results := make([][]GroupResult, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		items := make([]GroupEvent, n)
		for i := range n {
			j := i
			if w%2 == 1 {
				j = n - 1 - i // the other half of the writers go backwards
			}
			items[i] = GroupEvent{Event: sumEv(fmt.Sprintf("e%02d", j), "grpc", fmt.Sprintf("u%d", j%5), 1, "national", "province:zj"), Rules: sumTie}
		}
		wg.Go(func() { results[w], errs[w] = l.RecordGroup(ctx, items) })
	}
	wg.Wait()
	applied := map[string]int{}
	for w := range writers {
		if errs[w] != nil {
			t.Fatalf("writer %d: %v", w, errs[w])
		}
		for i, r := range results[w] {
			if r.Err != nil {
				t.Fatalf("writer %d event %d: %v", w, i, r.Err)
			}
			if !r.Outcome.Duplicate {
				j := i
				if w%2 == 1 {
					j = n - 1 - i
				}
				applied[fmt.Sprintf("e%02d", j)]++
			}
		}
	}
	if len(applied) != n {
		t.Errorf("%d ids applied, want %d", len(applied), n)
	}
	for id, c := range applied {
		if c != 1 {
			t.Errorf("%s applied %d times", id, c)
		}
	}
	for u := range 5 {
		got, err := l.Total(ctx, "grpc", testPeriod, "national", fmt.Sprintf("u%d", u))
		if err != nil || got.Points != n/5 || got.Version != n/5 {
			t.Errorf("u%d: %+v, %v; want %d points", u, got, err, n/5)
		}
	}
	if s := queryInt(t, l, `SELECT count(DISTINCT seq_after) FROM event_boards WHERE board = 'national' AND event_id LIKE 'grpc.%'`); s != n {
		t.Errorf("%d distinct seqs, want %d", s, n)
	}
}

// BenchmarkRecordGroup: one group commit of 100 events on 3 boards each, the
// shape of a batch of the load tool's events scenario (members spread, some
// repeated); side by side: plain sum events (the delta path), the same with
// metadata (delta path), and a family with two sort columns (the locking
// path: columns combine per column).
func BenchmarkRecordGroup(b *testing.B) {
	colRules := sumTie
	colRules.Columns = []rank.Column{{Name: "time", Asc: true, Max: 86400000, Agg: "last"}, {Name: "kills", Max: 999, Agg: "sum"}}
	for _, shape := range []struct {
		name, family string
		rules        Rules
		md           string
		cols         bool
	}{
		{"plain", "bench", sumTie, "", false},
		{"metadata", "benchmd", sumTie, `{"car":"red","lap":3}`, false},
		{"columns", "benchcols", colRules, "", true},
	} {
		b.Run(shape.name, func(b *testing.B) {
			// Each shape on its own fresh schema: none pays for another's rows.
			schema := "b_" + fmt.Sprint(time.Now().UnixNano())
			l, err := Open(context.Background(), testDSN(), Options{Schema: schema})
			if err != nil {
				b.Skip(err)
			}
			defer func() {
				_ = l.withConn(context.Background(), func(c *pgx.Conn) error {
					_, err := c.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
					return err
				})
				l.Close()
			}()
			ctx := context.Background()
			n := 0
			for b.Loop() {
				items := make([]GroupEvent, 100)
				for i := range items {
					n++
					m := fmt.Sprintf("m%d", (n*7919)%20000)
					ev := Event{EventID: fmt.Sprintf("%s.e%d", shape.family, n), Family: shape.family, Period: testPeriod, Member: m,
						Boards: []string{"national", "province:p" + fmt.Sprint(n%8), "class:c" + fmt.Sprint(n%50)}, Delta: ptr(3),
						Dims: map[string]string{"province": "p" + fmt.Sprint(n%8), "class": "c" + fmt.Sprint(n%50)}, Metadata: shape.md}
					if shape.cols {
						ev.Columns = []int64{int64(n % 86400000), 1}
					}
					items[i] = GroupEvent{Event: ev, Rules: shape.rules}
				}
				if _, err := l.RecordGroup(ctx, items); err != nil {
					b.Fatal(err)
				}
				if os.Getenv("BENCH_MARK") != "" {
					ids := make([]string, len(items))
					for i, it := range items {
						ids[i] = it.Event.EventID
					}
					if err := l.MarkProjected(ctx, ids...); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// A group's events wait for Redis in one pending row: the group's moved
// events share it (an unimproved max event, a duplicate and a refused one are
// not listed), MarkProjected of some ids shrinks it, MarkGroupProjected drops
// it, and a crash before either leaves the events to Unprojected.
func TestGroupPendingProjection(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	if _, err := l.Record(ctx, valEv("seed", "gp", "u1", 10), maxTie); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkProjected(ctx, "gp.seed"); err != nil {
		t.Fatal(err)
	}
	closed := valEv("late", "gp", "u9", 1)
	closed.Period = "2026-W01"
	if _, err := l.Freeze(ctx, "gp", "2026-W01"); err != nil {
		t.Fatal(err)
	}
	evs := []Event{
		valEv("a", "gp", "u1", 20),
		valEv("b", "gp", "u1", 5), // not an improvement: nothing to project
		valEv("seed", "gp", "u1", 10),
		closed,
		valEv("c", "gp", "u2", 7, "national", "province:zj"),
		valEv("d", "gp", "u3", 1),
	}
	items := make([]GroupEvent, len(evs))
	for i, ev := range evs {
		items[i] = GroupEvent{Event: ev, Rules: maxTie}
	}
	res, err := l.RecordGroup(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	p := res[0].Pending
	if p == 0 {
		t.Fatalf("a moved u1 but lists no pending row: %+v", res[0])
	}
	for i, want := range []int64{p, 0, 0, 0, p, p} {
		if res[i].Pending != want {
			t.Errorf("%s: pending %d, want %d (%+v)", evs[i].EventID, res[i].Pending, want, res[i])
		}
	}
	if n := queryInt(t, l, `SELECT count(*) FROM projection_pending`); n != 1 {
		t.Errorf("%d pending rows, want one for the group", n)
	}
	if n := queryInt(t, l, `SELECT count(*) FROM events WHERE NOT projected`); n != 0 {
		t.Errorf("%d events flagged unprojected: a group's events wait in its pending row", n)
	}
	ids := func() []string {
		ps, err := l.Unprojected(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.EventID)
		}
		return out
	}
	if got, want := ids(), []string{"gp.a", "gp.c", "gp.d"}; !slices.Equal(got, want) {
		t.Fatalf("unprojected = %v, want %v (a crash before the marks)", got, want)
	}
	if err := l.MarkProjected(ctx, "gp.c", "gp.unknown"); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), []string{"gp.a", "gp.d"}; !slices.Equal(got, want) {
		t.Errorf("after marking c: %v, want %v", got, want)
	}
	if err := l.MarkGroupProjected(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 0 {
		t.Errorf("after the group's mark: %v, want none", got)
	}
	if n := queryInt(t, l, `SELECT count(*) FROM projection_pending`); n != 0 {
		t.Errorf("%d pending rows left", n)
	}
	// Marking the last listed ids one by one drops the row too.
	res, err = l.RecordGroup(ctx, []GroupEvent{{Event: valEv("e", "gp", "u4", 3), Rules: maxTie}, {Event: valEv("f", "gp", "u5", 4), Rules: maxTie}})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("second group: %+v, %v", res, err)
	}
	if err := l.MarkProjected(ctx, "gp.e", "gp.f"); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, l, `SELECT count(*) FROM projection_pending`); n != 0 || len(ids()) != 0 {
		t.Errorf("after marking every id: %d pending rows, unprojected %v", n, ids())
	}
}

// Concurrent groups that create the same new totals rows, in any order of
// their events, never deadlock: each writer inserts or locks its rows in one
// pass in key order (no transaction is retried, none fails).
func TestRecordGroupNewRowsNoDeadlock(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		lockingOnly bool
	}{{"delta path", false}, {"locking path", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := openTest(t)
			l.lockingOnly = c.lockingOnly
			testNewRowsNoDeadlock(t, l)
		})
	}
}

func testNewRowsNoDeadlock(t *testing.T, l *Ledger) {
	ctx := t.Context()
	const writers, n, members = 6, 60, 25
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		items := make([]GroupEvent, n)
		for i := range n {
			m := (i*7 + w*11) % members // every writer touches every member, each in its own order
			items[i] = GroupEvent{Event: sumEv(fmt.Sprintf("w%d-%d", w, i), "nd", fmt.Sprintf("u%02d", m), 1,
				"national", fmt.Sprintf("province:p%d", m%3), fmt.Sprintf("class:c%d", (m+w)%4)), Rules: sumTie}
		}
		wg.Go(func() {
			res, err := l.RecordGroup(ctx, items)
			if err == nil {
				for _, r := range res {
					err = cmp.Or(err, r.Err)
				}
			}
			errs[w] = err
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", w, err)
		}
	}
	var retried dto.Metric
	if err := l.m.retries.WithLabelValues("record_group").Write(&retried); err != nil {
		t.Fatal(err)
	}
	if r := retried.GetCounter().GetValue(); r != 0 {
		t.Errorf("%v group transactions were retried (deadlocks), want none", r)
	}
	var sum int64
	for m := range members {
		got, err := l.Total(ctx, "nd", testPeriod, "national", fmt.Sprintf("u%02d", m))
		if err != nil {
			t.Fatal(err)
		}
		sum += got.Points
	}
	if sum != writers*n {
		t.Errorf("national sums to %d, want %d", sum, writers*n)
	}
}

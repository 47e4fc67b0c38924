package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A group's statements find totals rows by key whatever the table's
// statistics say: prepared on a fresh ledger (a few rows) and run after the
// table grew, without an ANALYZE in between, they must not scan it. Under
// plan_cache_mode auto, PostgreSQL caches a generic plan after five
// executions; planned while totals was tiny, it hash-joined a sequential
// scan of totals (groupPlanSettings).
func TestGroupPlansUseIndexesOnAGrownTable(t *testing.T) {
	t.Parallel()
	sumGroup := func(round int) []GroupEvent {
		evs := make([]GroupEvent, 2)
		for j := range evs {
			evs[j] = GroupEvent{Event: sumEv(fmt.Sprintf("r%d-%d", round, j), "plan", fmt.Sprintf("u%d", j), 1, "national", "province:zj"), Rules: sumTie}
		}
		return evs
	}
	maxGroup := func(round int) []GroupEvent {
		evs := make([]GroupEvent, 2)
		for j := range evs {
			evs[j] = GroupEvent{Event: valEv(fmt.Sprintf("r%d-%d", round, j), "plan", fmt.Sprintf("u%d", j), int64(round+1), "national", "province:zj"), Rules: maxTie}
		}
		return evs
	}
	cases := []struct {
		name string
		// first runs before the groups, on the same connection: a single
		// write whose statements are the locking path's, prepared (and
		// their generic plan cached) by it.
		first func(t *testing.T, l *Ledger)
		group func(round int) []GroupEvent
	}{
		{name: "sum groups (delta path)", group: sumGroup},
		{name: "max groups (locking path)", group: maxGroup},
		{name: "projections first, then max groups", group: maxGroup, first: func(t *testing.T, l *Ledger) {
			for i := range 8 {
				if _, err := l.Project(t.Context(), projEv("plan", fmt.Sprintf("p%d", i%2), int64(i+1), int64(i+1)),
					Rules{Aggregate: "max", Desc: true, TieFirst: true, MaxPoints: 1_000_000, SeqCapacity: 1 << 20, Projection: true}); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			groupPlansOnAGrownTable(t, c.first, c.group)
		})
	}
}

func groupPlansOnAGrownTable(t *testing.T, first func(*testing.T, *Ledger), groupOf func(round int) []GroupEvent) {
	ctx := t.Context()
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	// One connection: every group runs on the same prepared statements.
	l, err := Open(ctx, testDSN(), Options{Schema: schema, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			l.Close()
		}
	}()
	if first != nil {
		first(t, l)
	}
	group := func(round int) {
		t.Helper()
		res, err := l.RecordGroup(ctx, groupOf(round))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	for i := range 8 {
		group(i)
	}
	const rows = 20000
	c, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.totals (family, period, board, member)
		SELECT 'plan', $1, 'national', 'm' || g FROM generate_series(1, %d) g`, pgx.Identifier{schema}.Sanitize(), rows), testPeriod); err != nil {
		t.Fatal(err)
	}
	for i := 8; i < 13; i++ {
		group(i)
	}
	// The backends' statistics are flushed when they exit.
	l.Close()
	closed = true
	// The backend's statistics are flushed when it exits: wait for its
	// inserts (every group's event_boards rows), flushed with its scans.
	var read, ins int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := c.QueryRow(ctx, `SELECT (SELECT coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'totals'),
			(SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'event_boards')`, schema).Scan(&read, &ins); err != nil {
			t.Fatal(err)
		}
		if ins >= 13*2*2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger's statistics were not flushed (event_boards inserts seen: %d)", ins)
		}
		// Polls PostgreSQL's statistics, which no fake can stand in for.
		time.Sleep(100 * time.Millisecond)
		if _, err := c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
	}
	if read >= rows {
		t.Fatalf("the groups after totals grew to %d rows read %d rows by sequential scans", rows, read)
	}
}

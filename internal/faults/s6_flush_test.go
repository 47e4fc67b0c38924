//go:build faults

package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// topAll reads every board whole from the masters.
func topAll(ctx context.Context, s *stack) (map[string][]rank.Entry, error) {
	out := map[string][]rank.Entry{}
	for _, d := range boardDims() {
		p, err := s.svc.Top(ctx, s.ref(d), 1000, gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary})
		if err != nil {
			return nil, fmt.Errorf("top of %s: %w", d, err)
		}
		out[d] = p.Entries
	}
	return out, nil
}

// diffEntries compares two boards entry by entry (user, points, position,
// rank); "" when identical.
func diffEntries(a, b []rank.Entry) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d entries, want %d", len(b), len(a))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.User != y.User || x.Points != y.Points || x.Position != y.Position || x.Rank != y.Rank {
			return fmt.Sprintf("entry %d: %+v, want %+v", i, y, x)
		}
	}
	return ""
}

// Scenario 6: FLUSHALL one master of a ledger-mode gateway, then rebuild the
// boards with a shard on it from the ledger: every board reads exactly as
// before, entry by entry.
func TestFlushMasterRebuild(t *testing.T) {
	c := getCluster(t, baseFlush)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, c, stackOptions{ledger: true})
	l := newLoad(s, "flush", loadConfig{})
	l.seed(t)
	l.start(time.Minute)
	time.Sleep(3 * time.Second)
	l.finish(t)
	if _, err := s.svc.ProjectPending(ctx, 0); err != nil {
		t.Fatal(err)
	}
	before, err := topAll(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := chooseVictim(t, s, tp)
	var affected []string
	for _, d := range boardDims() {
		for _, sl := range s.boardSlots(d) {
			if tp.ownerOf(sl) == victim {
				affected = append(affected, d)
				break
			}
		}
	}
	keys, _ := c.node(victim).DBSize(ctx).Result()
	if err := c.node(victim).FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL on %d: %v", victim, err)
	}
	t.Logf("FLUSHALL on master %d (%d keys); boards with a shard there: %v", victim, keys, affected)
	mid, err := topAll(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var drift int64
	for _, d := range boardDims() {
		rep, err := s.svc.Reconcile(ctx, s.ref(d))
		if err != nil {
			t.Fatal(err)
		}
		drift += rep.Drifted
	}
	lostEntries := 0
	for _, d := range boardDims() {
		lostEntries += len(before[d]) - len(mid[d])
	}
	if drift == 0 || lostEntries == 0 {
		t.Fatalf("the flush changed nothing (drift %d, entries lost %d)", drift, lostEntries)
	}
	start := time.Now()
	for _, d := range affected {
		if _, err := s.svc.Rebuild(ctx, s.ref(d)); err != nil {
			t.Fatalf("rebuild %s: %v", d, err)
		}
	}
	took := time.Since(start)
	after, err := topAll(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for _, d := range boardDims() {
		if diff := diffEntries(before[d], after[d]); diff != "" {
			t.Errorf("board %s after rebuild: %s", d, diff)
		} else {
			same++
		}
	}
	var driftAfter int64
	for _, d := range boardDims() {
		rep, err := s.svc.Reconcile(ctx, s.ref(d))
		if err != nil {
			t.Fatal(err)
		}
		driftAfter += rep.Drifted
	}
	if driftAfter != 0 {
		t.Errorf("drift after rebuild: %d members", driftAfter)
	}
	a := runAudit(t, s, l)
	if !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
	na := outage{na: true}
	t.Log(resultLine("6 FLUSHALL one master, rebuild from ledger", s.mode(), na, na,
		"audit="+fmt.Sprintf("%d entries and %d drifted members after the flush; rebuilt %d boards in %s; %d/%d boards identical entry by entry; drift after %d; %s",
			lostEntries, drift, len(affected), took.Round(time.Millisecond), same, len(boardDims()), driftAfter, a)))
}

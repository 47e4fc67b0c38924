package gateway

import (
	"testing"
	"time"
)

// TestLifecycleNextStep pins the scheduler's decision table: which step a
// period needs in each state, and when a period is left alone.
func TestLifecycleNextStep(t *testing.T) {
	t.Parallel()
	freeze := time.Date(2026, 12, 7, 0, 5, 0, 0, time.UTC)
	full := lifecycleSchedule{Auto: true, FreezeAt: freeze, Settle: true, SettleAt: freeze.Add(time.Hour), Top: 10,
		Archive: true, ArchiveAt: freeze.Add(2 * time.Hour)}
	noSettle := lifecycleSchedule{Auto: true, FreezeAt: freeze, Archive: true, ArchiveAt: freeze.Add(2 * time.Hour)}
	manual := lifecycleSchedule{FreezeAt: freeze}
	cases := []struct {
		name   string
		sch    lifecycleSchedule
		state  string
		ledger bool
		boards bool
		want   NextStep
	}{
		{"open: freeze at its time", full, "open", true, true, NextStep{Step: StepFreeze, At: freeze}},
		{"never written state reads as open", full, "", false, false, NextStep{Step: StepFreeze, At: freeze}},
		{"manual freeze waits for an operator", manual, "open", false, true,
			NextStep{Step: StepFreeze, At: freeze, Waiting: "a manual freeze (lifecycle.freeze: manual)"}},
		{"frozen with boards: settle", full, "frozen", true, true, NextStep{Step: StepSettle, At: freeze.Add(time.Hour)}},
		{"frozen without boards: nothing to settle", full, "frozen", true, false, NextStep{}},
		{"frozen, Redis-only, archive", noSettle, "frozen", false, true, NextStep{Step: StepArchive, At: freeze.Add(2 * time.Hour)}},
		{"frozen, ledger without settle: archive waits for a settlement", noSettle, "frozen", true, true,
			NextStep{Step: StepArchive, At: freeze.Add(2 * time.Hour), Waiting: "a settlement (POST …/settle; lifecycle.settle is not set)"}},
		{"settled: archive", full, "settled", true, true, NextStep{Step: StepArchive, At: freeze.Add(2 * time.Hour)}},
		{"settled without archive: done", lifecycleSchedule{Auto: true, FreezeAt: freeze, Settle: true}, "settled", true, true, NextStep{}},
		{"archived: done", full, "archived", true, true, NextStep{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := c.sch.next(c.state, c.ledger, c.boards); got != c.want {
				t.Errorf("next(%q, ledger %v, boards %v) = %+v, want %+v", c.state, c.ledger, c.boards, got, c.want)
			}
		})
	}
}

func TestLifecycleUnwritten(t *testing.T) {
	t.Parallel()
	freeze := time.Date(2026, 12, 7, 0, 5, 0, 0, time.UTC)
	sch := lifecycleSchedule{Auto: true, FreezeAt: freeze}
	cases := []struct {
		name   string
		exists bool
		now    time.Time
		want   bool
	}{
		{"written: never left alone", true, freeze.Add(24 * time.Hour), false},
		{"unwritten before its freeze", false, freeze.Add(-time.Hour), false},
		{"unwritten inside the margin: a late first write may still come", false, freeze.Add(emptyMargin - time.Second), false},
		{"unwritten at the margin", false, freeze.Add(emptyMargin), true},
		{"unwritten long after", false, freeze.Add(24 * time.Hour), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := sch.unwritten(c.exists, c.now); got != c.want {
				t.Errorf("unwritten(%v, %s) = %v, want %v", c.exists, c.now, got, c.want)
			}
		})
	}
}

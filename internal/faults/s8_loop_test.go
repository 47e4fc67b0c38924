//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// envLoops overrides the number of failovers of scenario 8 (default 20).
const envLoops = "RANKGATE_FAULTS_LOOPS"

// modeRun is one gateway (stack) and its load, with what the scenario saw.
type modeRun struct {
	s *stack
	l *load
	// worst outages over all faults, and their sum (for the mean)
	worstW, worstR, sumW, sumR time.Duration
	faults                     int
	notRecovered               int
	last                       audit
	hist                       history // over every audit (each checks the reads since the one before)
}

// threeModes builds the three gateways the issue-15 scenarios compare on
// one cluster at once — Redis-only, Redis-only with wait_replicas 1, and
// ledger — each under a key prefix of its own with its own seeded load, so
// that every fault hits all three the same way.
func threeModes(t *testing.T, c *cluster, tag string, lc loadConfig) []*modeRun {
	t.Helper()
	opts := []stackOptions{{}, {waitReplicas: 1}, {ledger: true}}
	runs := make([]*modeRun, len(opts))
	for i, o := range opts {
		s := newStack(t, c, o)
		l := newLoad(s, fmt.Sprintf("%s%d", tag, i), lc)
		l.seed(t)
		runs[i] = &modeRun{s: s, l: l}
	}
	return runs
}

// note records one fault's outages for a mode.
func (m *modeRun) note(w, r outage) {
	m.faults++
	if w.d < 0 || r.d < 0 {
		m.notRecovered++
		return
	}
	m.worstW, m.worstR = max(m.worstW, w.d), max(m.worstR, r.d)
	m.sumW += w.d
	m.sumR += r.d
}

func (m *modeRun) outages() string {
	if m.faults == 0 {
		return "n/a"
	}
	n := time.Duration(max(1, m.faults-m.notRecovered))
	s := fmt.Sprintf("write worst %s mean %s, read worst %s mean %s over %d faults",
		m.worstW.Round(10*time.Millisecond), (m.sumW / n).Round(10*time.Millisecond),
		m.worstR.Round(10*time.Millisecond), (m.sumR / n).Round(10*time.Millisecond), m.faults)
	if m.notRecovered > 0 {
		s += fmt.Sprintf(", %d NOT RECOVERED", m.notRecovered)
	}
	return s
}

// checkMode asserts a mode's audit: no double count and a history explained
// by the audit everywhere (audit.ok); with wait_replicas or the ledger, not
// one acknowledged event lost (the goal; Redis-only without WAIT
// reports its loss).
func checkMode(t *testing.T, m *modeRun, when string) {
	t.Helper()
	a := m.last
	if !a.ok() {
		t.Errorf("%s, %s: audit failed: %s", m.s.mode(), when, a)
		for _, d := range a.details {
			t.Logf("  audit: %s", d)
		}
	}
	if m.s.wait > 0 && (a.lostBoardEvents > 0 || a.short > 0 || a.hist.violations() > 0) {
		t.Errorf("%s, %s: acknowledged events lost with wait_replicas %d: %s", m.s.mode(), when, m.s.wait, a)
		for _, d := range a.details {
			t.Logf("  audit: %s", d)
		}
	}
}

// Scenario 8: the failover loop (Redis's tests/cluster/tests/03-failover-loop.tcl):
// successive SIGKILLs of a master under load, each followed by the
// replica's promotion and the old master's restart as a replica; after each,
// the loads stop, every mode is audited (exact account, history checker),
// and the loads resume.
func TestFailoverLoop(t *testing.T) {
	loops := 20
	if v := os.Getenv(envLoops); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", envLoops, v)
		}
		loops = n
	}
	c := getCluster(t, baseLoop)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatalf("cluster %d not healthy: %v", baseLoop, err)
	}
	runs := threeModes(t, c, "loop", loadConfig{writers: 2, readers: 1, probeEvery: 100 * time.Millisecond})
	goal := nodeTimeoutFor(baseLoop) + 2*time.Second
	var promoteWorst, promoteSum time.Duration
	for i := 1; i <= loops; i++ {
		for _, m := range runs {
			if i == 1 {
				m.l.start(time.Minute)
			} else {
				m.l.resume(time.Minute)
			}
		}
		time.Sleep(300 * time.Millisecond) // every load under way
		tp, err := c.topology(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms := tp.masters()
		victim := ms[i%len(ms)]
		pid, err := c.pid(ctx, victim)
		if err != nil {
			t.Fatal(err)
		}
		affected := make([]func(op) bool, len(runs))
		for j, m := range runs {
			affected[j] = m.l.affectedBy(tp, victim)
		}
		maps := make([]*mapWatch, len(runs))
		t0 := time.Now()
		for j, m := range runs {
			maps[j] = m.s.watchMap(t0, tp, victim)
		}
		if err := c.signal(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var promoted time.Duration
		err = poll(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
			for _, r := range tp.replicasOf(victim) {
				if role, err := c.role(ctx, r); err == nil && role == "master" {
					promoted = time.Since(t0)
					return true, nil
				}
			}
			return false, fmt.Errorf("no replica of %d promoted", victim)
		})
		if err != nil {
			t.Fatalf("loop %d: %v", i, err)
		}
		promoteWorst, promoteSum = max(promoteWorst, promoted), promoteSum+promoted
		if err := waitExit(ctx, pid, 5*time.Second); err != nil {
			t.Fatalf("loop %d: %v", i, err)
		}
		if err := c.restart(ctx, victim); err != nil {
			t.Fatalf("loop %d: restart %d: %v", i, victim, err)
		}
		for j, m := range runs {
			if !waitFor(10*time.Second, func() bool { return m.l.recovered(t0, affected[j]) }) {
				t.Errorf("loop %d, %s: no affected write or read succeeded within 10s", i, m.s.mode())
			}
		}
		if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
			t.Fatalf("loop %d: old master %d did not rejoin as a synced replica: %v", i, victim, err)
		}
		line := fmt.Sprintf("loop %d: SIGKILL %d, replica promoted +%s;", i, victim, promoted.Round(10*time.Millisecond))
		for j, m := range runs {
			m.l.finish(t)
			w, r := m.l.outageOf(true, t0, affected[j]), m.l.outageOf(false, t0, affected[j])
			m.note(w, r)
			m.last = runAudit(t, m.s, m.l)
			m.hist.add(m.last.hist)
			checkMode(t, m, fmt.Sprintf("loop %d", i))
			maps[j].stop()
			line += fmt.Sprintf(" %s map %s w %s r %s lost %d viol %d;", m.s.mode(), maps[j], w.d.Round(10*time.Millisecond),
				r.d.Round(10*time.Millisecond), m.last.lostEvents, m.last.hist.violations())
		}
		t.Log(line)
	}
	for _, m := range runs {
		a := m.last
		cn := m.l.counts()
		t.Log(resultLine(fmt.Sprintf("8 failover loop: %d× SIGKILL master + restart", loops), m.s.mode(), outage{na: true}, outage{na: true},
			fmt.Sprintf("outage=[%s] goal=%s promotion=[worst +%s mean +%s] attempts=%d/%d failed history_all_rounds=[%s] audit=%s",
				m.outages(), goal, promoteWorst.Round(10*time.Millisecond), (promoteSum/time.Duration(loops)).Round(10*time.Millisecond),
				cn.writes+cn.reads, cn.writeErrs+cn.readErrs, m.hist, a)))
		if m.notRecovered > 0 {
			t.Errorf("%s: %d faults not recovered", m.s.mode(), m.notRecovered)
		}
	}
}

//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// outageGoal: writes and reads to a failed master's slots succeed again
// within the node timeout plus 2 s.
const outageGoal = nodeTimeout + 2*time.Second

// faultEnv is a cluster, a gateway over it, a seeded load, and the master
// the fault will hit.
type faultEnv struct {
	c        *cluster
	s        *stack
	l        *load
	tp       topology
	victim   int
	pid      int
	affected func(op) bool
}

// chooseVictim picks the master serving the most national shards among those
// that also serve a province board and do not serve the period's keys (the
// achievement counter and period meta: every Redis-only write reads or bumps
// them, so their master's failure is every write's outage, not its slots').
func chooseVictim(t *testing.T, s *stack, tp topology) int {
	t.Helper()
	best, bestN := 0, -1
	for _, m := range tp.masters() {
		if tp.ownerOf(s.periodSlot()) == m {
			continue
		}
		nat, prov := 0, 0
		for _, sl := range s.boardSlots("national") {
			if tp.ownerOf(sl) == m {
				nat++
			}
		}
		for _, d := range boardDims()[1:] {
			for _, sl := range s.boardSlots(d) {
				if tp.ownerOf(sl) == m {
					prov++
				}
			}
		}
		n := nat * 10
		if prov > 0 {
			n += 5
		}
		if n > bestN {
			best, bestN = m, n
		}
	}
	if best == 0 {
		t.Fatal("no master to fail")
	}
	return best
}

func setupFault(t *testing.T, base int, so stackOptions, lc loadConfig, tag string) *faultEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := getCluster(t, base)
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatalf("cluster %d not healthy: %v", base, err)
	}
	s := newStack(t, c, so)
	l := newLoad(s, tag, lc)
	l.seed(t)
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := &faultEnv{c: c, s: s, l: l, tp: tp}
	e.victim = chooseVictim(t, s, tp)
	if e.pid, err = c.pid(ctx, e.victim); err != nil {
		t.Fatal(err)
	}
	e.affected = l.affectedBy(tp, e.victim)
	aff := 0
	for i := 0; i < users; i++ {
		if e.affected(op{write: true, user: i}) {
			aff++
		}
	}
	t.Logf("%s mode; masters %s; victim master %d (pid %d, replica %s); %d of %d users write its slots; period keys on %d",
		s.mode(), joinPorts(tp.masters()), e.victim, e.pid, joinPorts(tp.replicasOf(e.victim)), aff, users, tp.ownerOf(s.periodSlot()))
	l.start(3 * time.Minute)
	time.Sleep(2 * time.Second) // steady state before the fault
	return e
}

// settle keeps the load running until an affected write and read succeeded
// after t0 (bounded), then for extra more, and stops it.
func (e *faultEnv) settle(t *testing.T, t0 time.Time, bound, extra time.Duration) {
	t.Helper()
	if !waitFor(bound, func() bool { return e.l.recovered(t0, e.affected) }) {
		t.Errorf("no affected write or read succeeded within %s of the fault", bound)
	}
	time.Sleep(extra)
	e.l.finish(t)
}

// report prints the scenario's line and checks the audit.
func (e *faultEnv) report(t *testing.T, scenario string, t0 time.Time, goal time.Duration, needExact bool) (outage, outage, audit) {
	t.Helper()
	w := e.l.outageOf(true, t0, e.affected)
	r := e.l.outageOf(false, t0, e.affected)
	a := runAudit(t, e.s, e.l)
	cn := e.l.counts()
	t.Logf("load: %d write attempts (%d failed), %d reads (%d failed)", cn.writes, cn.writeErrs, cn.reads, cn.readErrs)
	if cn.writeErrs > 0 {
		t.Logf("write errors: %s", e.l.errorKinds(true))
	}
	if cn.readErrs > 0 {
		t.Logf("read errors: %s", e.l.errorKinds(false))
	}
	t.Log(resultLine(scenario, e.s.mode(), w, r, a.String()))
	for _, d := range a.details {
		t.Logf("  audit: %s", d)
	}
	if !a.ok() {
		t.Errorf("audit failed: %s", a)
	}
	if needExact && !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
	if goal > 0 {
		for _, x := range []struct {
			what string
			o    outage
		}{{"write", w}, {"read", r}} {
			if x.o.d < 0 || x.o.d > goal {
				t.Errorf("%s outage %s exceeds the goal %s", x.what, x.o, goal)
			}
		}
	}
	return w, r, a
}

// modes runs fn in Redis-only mode and in ledger mode, each on its cluster.
func modes(t *testing.T, redisBase, ledgerBase int, fn func(t *testing.T, base int, ledger bool)) {
	t.Run("redis-only", func(t *testing.T) { fn(t, redisBase, false) })
	t.Run("ledger", func(t *testing.T) { fn(t, ledgerBase, true) })
}

// Scenario 1: SIGKILL a master under load. Its replica is promoted after the
// node timeout; writes and reads to its slots come back within the goal.
// Redis-only mode may lose acknowledged writes (asynchronous replication):
// the audit reports them and fails only on a double count. Ledger mode
// re-projects and rebuilds: nothing acknowledged is missing.
func TestKillMaster(t *testing.T) {
	modes(t, baseKillRedis, baseKillLedger, func(t *testing.T, base int, ledger bool) {
		e := setupFault(t, base, stackOptions{ledger: ledger}, loadConfig{}, "kill")
		t0 := time.Now()
		if err := e.c.signal(e.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		tl := e.c.watch(t0, e.tp, e.victim)
		e.settle(t, t0, 20*time.Second, 1500*time.Millisecond)
		tl.stop()
		t.Logf("redis: %s", tl)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := poll(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
			tp, err := e.c.topology(ctx, e.victim)
			if err != nil {
				return false, err
			}
			for _, r := range e.tp.replicasOf(e.victim) {
				for _, m := range tp.masters() {
					if m == r {
						return true, nil
					}
				}
			}
			return false, fmt.Errorf("no replica of %d promoted; masters %s", e.victim, joinPorts(tp.masters()))
		})
		if err != nil {
			t.Errorf("failover: %v", err)
		}
		e.report(t, "1 SIGKILL master", t0, outageGoal, false)
	})
}

// Scenario 2: SIGSTOP a master past the node timeout, then SIGCONT: its
// replica is promoted, and the old master rejoins as a replica of it.
func TestPauseMasterPastTimeout(t *testing.T) {
	modes(t, basePauseRedis, basePauseLedger, func(t *testing.T, base int, ledger bool) {
		e := setupFault(t, base, stackOptions{ledger: ledger}, loadConfig{}, "pause")
		pause := nodeTimeout + 3*time.Second
		t0 := time.Now()
		if err := e.c.signal(e.pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		tl := e.c.watch(t0, e.tp, e.victim)
		time.Sleep(pause)
		if err := e.c.signal(e.pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		tCont := time.Now()
		err := poll(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
			role, err := e.c.role(ctx, e.victim)
			if err != nil || role != "slave" {
				return false, fmt.Errorf("ROLE of %d: %q %v", e.victim, role, err)
			}
			tp, err := e.c.topology(ctx, e.victim)
			if err != nil {
				return false, err
			}
			for _, r := range tp.rows {
				if r.port == e.victim && !r.master {
					return true, nil
				}
			}
			return false, fmt.Errorf("CLUSTER NODES still shows %d as master", e.victim)
		})
		if err != nil {
			t.Errorf("old master did not rejoin as a replica: %v", err)
		} else {
			t.Logf("old master %d is a replica %s after SIGCONT (paused %s)", e.victim, time.Since(tCont).Round(10*time.Millisecond), pause)
		}
		e.settle(t, t0, 20*time.Second, 1500*time.Millisecond)
		tl.stop()
		t.Logf("redis: %s", tl)
		e.report(t, fmt.Sprintf("2 SIGSTOP master %s > node timeout", pause), t0, outageGoal, false)
	})
}

// Scenario 3: SIGSTOP a master for less than the node timeout, with a read
// timeout shorter than the pause: go-redis re-sends the timed-out commands,
// the node runs every copy when it wakes, and the in-slot dedupe keeps the
// counts exact. No failover.
func TestPauseMasterShort(t *testing.T) {
	const pause = 1500 * time.Millisecond
	e := setupFault(t, basePauseShort, stackOptions{readTimeout: 300 * time.Millisecond}, loadConfig{}, "short")
	t0 := time.Now()
	if err := e.c.signal(e.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	if err := e.c.signal(e.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	e.settle(t, t0, 10*time.Second, 1500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if role, err := e.c.role(ctx, e.victim); err != nil || role != "master" {
		t.Errorf("a failover happened (ROLE of %d: %q, %v): the pause must stay under the node timeout", e.victim, role, err)
	}
	dup := e.s.counter(t, "rankgate_dedupe_hits_total")
	t.Logf("dedupe hits (duplicates answered, incl. re-sent commands run twice): %.0f", dup)
	e.report(t, fmt.Sprintf("3 SIGSTOP master %s < node timeout, read timeout 300ms", pause), t0, pause+2*time.Second, true)
}

// Scenario 4: restart a replica (SIGTERM, then redis-server with its config)
// while consistency=replica reads run: a board known to be non-empty is never
// answered empty (nor a known member not_ranked) with success.
func TestRestartReplica(t *testing.T) {
	c := getCluster(t, baseReplica)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, c, stackOptions{replicaReads: true})
	var (
		replicaReads, emptyAnswers, notRanked, errs int
		firstBad                                    string
	)
	var l *load
	read := func(ctx context.Context, rng *rand.Rand) (string, error) {
		dim := boardDims()[rng.IntN(len(boardDims()))]
		o := gateway.ReadOptions{Consistency: gateway.ConsistencyReplica}
		var err error
		var bad string
		var src gateway.Source
		emptyTop := false
		if rng.IntN(2) == 0 {
			var p gateway.Page
			p, err = s.svc.Top(ctx, s.ref(dim), 10, o)
			src = p.Source
			if err == nil && len(p.Entries) == 0 {
				bad, emptyTop = fmt.Sprintf("Top of %s answered empty from %s", dim, p.Source), true
			}
		} else {
			u := rng.IntN(users)
			if dim != "national" {
				dim = provinceDim(provinceOf(u))
			}
			var m gateway.MemberStanding
			m, err = s.svc.Member(ctx, s.ref(dim), userName(u), o)
			src = m.Source
			if rank.CodeOf(err) == rank.CodeNotRanked {
				bad = fmt.Sprintf("member %s answered not_ranked on %s", userName(u), dim)
				err = nil
			}
		}
		l.mu.Lock()
		if bad != "" && firstBad == "" {
			firstBad = bad
		}
		switch {
		case bad != "" && emptyTop:
			emptyAnswers++
		case bad != "":
			notRanked++
		case err != nil:
			errs++
		case src == gateway.SourceReplica:
			replicaReads++
		}
		l.mu.Unlock()
		return dim, err
	}
	l = newLoad(s, "replica", loadConfig{readers: 3, read: read, readPause: 5 * time.Millisecond})
	l.seed(t)
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	master := chooseVictim(t, s, tp)
	reps := tp.replicasOf(master)
	if len(reps) == 0 {
		t.Fatalf("master %d has no replica", master)
	}
	victim := reps[0]
	pid, err := c.pid(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restarting replica %d (pid %d) of master %d", victim, pid, master)
	l.start(2 * time.Minute)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	if err := c.signal(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(ctx, pid, 15*time.Second); err != nil {
		t.Fatalf("replica did not stop: %v", err)
	}
	tDown := time.Since(t0)
	time.Sleep(time.Second)
	if err := c.restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	tUp := time.Since(t0)
	err = poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		repl, err := c.node(victim).Info(ctx, "replication").Result()
		if err != nil {
			return false, err
		}
		st := infoField(repl, "master_link_status")
		return infoField(repl, "role") == "slave" && st == "up", fmt.Errorf("role %s link %s", infoField(repl, "role"), st)
	})
	if err != nil {
		t.Errorf("restarted replica did not resync: %v", err)
	}
	tSync := time.Since(t0)
	time.Sleep(3 * time.Second)
	l.finish(t)
	stats, _ := c.node(victim).Info(ctx, "commandstats").Result()
	served := infoField(stats, "cmdstat_evalsha_ro")
	a := runAudit(t, s, l)
	cn := l.counts()
	t.Logf("replica stopped at +%s, restarted at +%s, in sync at +%s; the restarted replica ran EVALSHA_RO: %q",
		tDown.Round(10*time.Millisecond), tUp.Round(10*time.Millisecond), tSync.Round(10*time.Millisecond), served)
	t.Logf("replica reads: %d answered from replicas, %d errors, %d empty Top answers, %d not_ranked for ranked members",
		replicaReads, errs, emptyAnswers, notRanked)
	if errs > 0 {
		t.Logf("read errors: %s", l.errorKinds(false))
	}
	verdict := fmt.Sprintf("%d replica reads, %d errors, %d stale-empty answers; writes: %s", cn.reads, errs, emptyAnswers+notRanked, a)
	t.Log(resultLine("4 restart replica under replica reads", s.mode(), outage{d: 0}, outage{d: 0, fails: errs}, verdict))
	if emptyAnswers+notRanked > 0 {
		t.Errorf("replica reads served %d stale-empty answers (first: %s)", emptyAnswers+notRanked, firstBad)
	}
	if !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
}

// Scenario 5: SCRIPT FLUSH on every node under load, then a manual failover
// and SCRIPT FLUSH again: NOSCRIPT is recovered (outside pipelines for the
// writes), so no request fails.
func TestScriptFlush(t *testing.T) {
	c := getCluster(t, baseScripts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, c, stackOptions{replicaReads: true})
	read := func(ctx context.Context, rng *rand.Rand) (string, error) {
		dim := boardDims()[rng.IntN(len(boardDims()))]
		levels := []gateway.Consistency{gateway.ConsistencyPrimary, gateway.ConsistencyReplica}
		o := gateway.ReadOptions{Consistency: levels[rng.IntN(2)]}
		if rng.IntN(2) == 0 {
			_, err := s.svc.Top(ctx, s.ref(dim), 10, o)
			return dim, err
		}
		_, err := s.svc.Member(ctx, s.ref("national"), userName(rng.IntN(users)), o)
		return "national", err
	}
	l := newLoad(s, "scripts", loadConfig{read: read})
	l.seed(t)
	flush := func(what string) time.Time {
		t0 := time.Now()
		for _, p := range c.ports() {
			if err := c.node(p).ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH on %d: %v", p, err)
			}
		}
		t.Logf("SCRIPT FLUSH on all 6 nodes (%s)", what)
		return t0
	}
	l.start(2 * time.Minute)
	time.Sleep(1500 * time.Millisecond)
	t0 := flush("under load")
	time.Sleep(2 * time.Second)

	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	master := chooseVictim(t, s, tp)
	rep := tp.replicasOf(master)[0]
	tf := time.Now()
	if err := c.node(rep).Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %d: %v", rep, err)
	}
	if err := poll(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
		r, err := c.role(ctx, rep)
		return r == "master", fmt.Errorf("ROLE %q %v", r, err)
	}); err != nil {
		t.Fatalf("manual failover of %d to %d: %v", master, rep, err)
	}
	t.Logf("manual failover: replica %d took over from %d in %s", rep, master, time.Since(tf).Round(10*time.Millisecond))
	t1 := flush("after the failover")
	time.Sleep(2500 * time.Millisecond)
	l.finish(t)

	cn := l.counts()
	noscript := s.counter(t, "rankgate_redis_noscript_recovered_total")
	a := runAudit(t, s, l)
	all := func(op) bool { return true }
	w, r := l.outageOf(true, t0, all), l.outageOf(false, t0, all)
	t.Logf("load: %d write attempts (%d failed), %d reads (%d failed); pipelined NOSCRIPT recovered: %.0f; second flush at +%s",
		cn.writes, cn.writeErrs, cn.reads, cn.readErrs, noscript, t1.Sub(t0).Round(10*time.Millisecond))
	if cn.writeErrs > 0 {
		t.Logf("write errors: %s", l.errorKinds(true))
	}
	if cn.readErrs > 0 {
		t.Logf("read errors: %s", l.errorKinds(false))
	}
	t.Log(resultLine("5 SCRIPT FLUSH all nodes, twice (2nd after a manual failover)", s.mode(), w, r,
		fmt.Sprintf("write errors %d, read errors %d, NOSCRIPT recovered %.0f; %s", cn.writeErrs, cn.readErrs, noscript, a)))
	if cn.writeErrs > 0 || cn.readErrs > 0 {
		t.Errorf("errors under SCRIPT FLUSH: %d writes, %d reads", cn.writeErrs, cn.readErrs)
	}
	if noscript == 0 {
		t.Errorf("no pipelined NOSCRIPT was recovered: the flush did not reach the write path")
	}
	if !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
}

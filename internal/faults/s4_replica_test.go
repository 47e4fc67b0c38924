//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// evalshaRO is how many EVALSHA_RO calls a node has run since it started
// (the replica reads of seek and position).
func (c *cluster) evalshaRO(ctx context.Context, port int) int {
	s, err := c.node(port).Info(ctx, "commandstats").Result()
	if err != nil {
		return -1
	}
	v := infoField(s, "cmdstat_evalsha_ro")
	v, _ = strings.CutPrefix(v, "calls=")
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	n, _ := strconv.Atoi(v)
	return n
}

// Scenario 4: restart a replica (SIGTERM, then redis-server with its config)
// while consistency=replica reads run: a board known to be non-empty must
// never be answered empty (nor a ranked member not_ranked) with success.
//
// A restarted replica loads the RDB of its last full sync, asks for a partial
// resync and, when the master's backlog no longer covers it, waits for a full
// one — serving that old data under Redis's default replica-serve-stale-data
// yes, listed in CLUSTER SLOTS as long as that RDB's replication offset is
// not 0. cluster.sh starts nodes with replica-serve-stale-data no since this
// scenario found it (docs/reliability.md); RANKGATE_FAULTS_REDIS_ARGS=
// "--replica-serve-stale-data yes" brings the failure back. The test sets this up: every replica first does a full sync
// before any board exists (so its RDB is recent, at a non-zero offset, and
// holds no board), the masters' backlog is shrunk to its 16 KiB minimum so
// the load overruns it, and repl-diskless-sync-delay stands in for the
// transfer time of a large dataset: a window of ~syncDelay in which the
// restarted replica answers with cluster_state:ok, master_link_status:down
// and empty boards.
func TestRestartReplica(t *testing.T) {
	const syncDelay = 25 * time.Second
	c := getCluster(t, baseReplica)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, c, stackOptions{replicaReads: true})
	var (
		l                                    *load
		replicaOK, errs, emptyTop, notRanked int
		firstBad                             string
		firstBadAt                           time.Time
		badTimes                             []time.Time
	)
	read := func(ctx context.Context, rng *rand.Rand) (string, error) {
		u := rng.IntN(users)
		dim := "national"
		if rng.IntN(2) == 0 {
			dim = provinceDim(provinceOf(u))
		}
		o := gateway.ReadOptions{Consistency: gateway.ConsistencyReplica}
		var (
			err   error
			bad   string
			empty bool
			src   gateway.Source
		)
		if rng.IntN(2) == 0 {
			var p gateway.Page
			p, err = s.svc.Top(ctx, s.ref(dim), 10, o)
			src = p.Source
			if err == nil && len(p.Entries) == 0 {
				bad, empty = fmt.Sprintf("Top 10 of %s answered empty (source %s)", dim, p.Source), true
			}
		} else {
			var m gateway.MemberStanding
			m, err = s.svc.Member(ctx, s.ref(dim), userName(u), o)
			src = m.Source
			if rank.CodeOf(err) == rank.CodeNotRanked {
				bad = fmt.Sprintf("member %s answered not_ranked on %s (source %s)", userName(u), dim, gateway.SourceReplica)
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case bad != "":
			if firstBad == "" {
				firstBad, firstBadAt = bad, time.Now()
			}
			badTimes = append(badTimes, time.Now())
			if empty {
				emptyTop++
			} else {
				notRanked++
			}
			return dim, nil // a wrong answer, not an error
		case err != nil:
			errs++
		case src == gateway.SourceReplica:
			replicaOK++
		}
		return dim, err
	}
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []int
	for _, m := range tp.masters() {
		mc := c.node(m)
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer ccancel()
			_ = mc.ConfigSet(cctx, "repl-backlog-size", "1048576").Err()
			_ = mc.ConfigSet(cctx, "repl-diskless-sync-delay", "5").Err()
		})
		for _, r := range tp.replicasOf(m) {
			replicas = append(replicas, r)
			if err := c.fullSyncNow(ctx, tp, r, m); err != nil {
				t.Fatalf("preparing replica %d: %v", r, err)
			}
		}
	}
	t.Logf("replicas %s restarted once with a full sync: their RDB is recent, at a non-zero offset, and holds no board", joinPorts(replicas))

	l = newLoad(s, "replica", loadConfig{readers: 3, read: read, readPause: 5 * time.Millisecond})
	l.seed(t)
	// Replica reads are stale-ok: only once the replicas hold the seeded
	// boards is an empty answer wrong.
	if err := c.waitReplicated(ctx, tp, 10*time.Second); err != nil {
		t.Fatalf("replicas did not catch up with the seed: %v", err)
	}
	l.start(3 * time.Minute)

	// The replica that serves the most replica reads is the one to restart.
	before := map[int]int{}
	for _, r := range replicas {
		before[r] = c.evalshaRO(ctx, r)
	}
	time.Sleep(2 * time.Second)
	victim, best := 0, -1
	for _, r := range replicas {
		if d := c.evalshaRO(ctx, r) - before[r]; d > best {
			victim, best = r, d
		}
	}
	master := 0
	for _, m := range tp.masters() {
		for _, r := range tp.replicasOf(m) {
			if r == victim {
				master = m
			}
		}
	}
	if best <= 0 {
		t.Logf("note: no replica served reads during the warm-up (RouteByLatency chose the masters)")
	}
	if err := c.node(master).ConfigSet(ctx, "repl-diskless-sync-delay", strconv.Itoa(int(syncDelay/time.Second))).Err(); err != nil {
		t.Fatal(err)
	}
	pid, err := c.pid(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restarting replica %d (pid %d, %d replica reads in 2 s) of master %d; master backlog 16 KiB, diskless sync delay %s",
		victim, pid, best, master, syncDelay)

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

	// Until its link is up, the restarted replica serves what it loaded: the
	// probe asks it directly (READONLY) for the size of a board shard of its
	// slots that the master holds non-empty.
	probeKey := ""
	for _, d := range boardDims() {
		n := shardsOf(d)
		for i := 0; i < n && probeKey == ""; i++ {
			if k := s.layout.ZKey(s.board(d), i, n); tp.ownerOf(shard.Slot(k)) == master {
				probeKey = k
			}
		}
	}
	ro := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("%s:%d", host, victim), DialTimeout: time.Second, ReadTimeout: time.Second,
		MaxRetries: -1, PoolSize: 1, OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	defer ro.Close()
	var tSync, staleFor time.Duration
	servedStale, emptyProbes, probes := 0, 0, 0
	deadline := time.Now().Add(syncDelay + 20*time.Second)
	for time.Now().Before(deadline) {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		repl, err := c.node(victim).Info(cctx, "replication").Result()
		calls := c.evalshaRO(cctx, victim)
		card, cerr := ro.ZCard(cctx, probeKey).Result()
		ccancel()
		if err == nil && infoField(repl, "master_link_status") == "up" {
			tSync = time.Since(t0)
			break
		}
		if cerr == nil {
			probes++
			if card == 0 {
				emptyProbes++
				staleFor = time.Since(t0) - tUp
			}
		}
		if calls > servedStale {
			servedStale = calls
		}
		time.Sleep(250 * time.Millisecond)
	}
	if tSync == 0 {
		t.Errorf("restarted replica %d did not resync within %s", victim, syncDelay+20*time.Second)
	}
	time.Sleep(2 * time.Second)
	l.finish(t)
	servedAfter := c.evalshaRO(ctx, victim) - servedStale
	a := runAudit(t, s, l)
	cn := l.counts()
	l.mu.Lock()
	badAt := time.Duration(0)
	if !firstBadAt.IsZero() {
		badAt = firstBadAt.Sub(t0)
	}
	stale := emptyTop + notRanked
	if len(badTimes) > 0 {
		t.Logf("stale-empty answers from +%s to +%s", badTimes[0].Sub(t0).Round(10*time.Millisecond), badTimes[len(badTimes)-1].Sub(t0).Round(10*time.Millisecond))
	}
	l.mu.Unlock()

	t.Logf("replica %d: stopped +%s, restarted +%s, link up +%s; it ran %d EVALSHA_RO while its link was down, %d in the 2 s after",
		victim, tDown.Round(10*time.Millisecond), tUp.Round(10*time.Millisecond), tSync.Round(10*time.Millisecond), servedStale, servedAfter)
	t.Logf("direct READONLY probe of the restarted replica: ZCARD %s = 0 in %d of %d probes while its link was down (until +%s after restart)",
		probeKey, emptyProbes, probes, staleFor.Round(10*time.Millisecond))
	t.Logf("replica reads: %d OK, %d errors, %d empty Top 10, %d not_ranked for ranked members (first at +%s: %s)",
		replicaOK, errs, emptyTop, notRanked, badAt.Round(10*time.Millisecond), firstBad)
	if errs > 0 {
		t.Logf("read errors: %s", l.errorKinds(false))
	}
	na := outage{na: true}
	t.Log(resultLine("4 restart replica under consistency=replica reads", s.mode(), na, na,
		"audit="+fmt.Sprintf("%d replica reads, %d errors, STALE-EMPTY answers %d (%d empty Top 10, %d not_ranked); restarted replica: link down %s, direct READONLY ZCARD of a non-empty shard = 0 in %d/%d probes, ran %d gateway reads meanwhile; writes: %s",
			cn.reads, errs, stale, emptyTop, notRanked, (tSync-tUp).Round(100*time.Millisecond), emptyProbes, probes, servedStale, a)))
	if stale > 0 {
		t.Errorf("replica reads served %d stale-empty answers, first at +%s: %s", stale, badAt.Round(10*time.Millisecond), firstBad)
	}
	if !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
}

// fullSyncNow restarts a replica so that it takes a full sync at once: the
// master's backlog is shrunk to 16 KiB and 64 KiB are written while the
// replica is down (a key of the master's slots, expiring in a minute).
func (c *cluster) fullSyncNow(ctx context.Context, tp topology, replica, master int) error {
	mc := c.node(master)
	for _, kv := range [][2]string{{"repl-backlog-size", "16384"}, {"repl-diskless-sync-delay", "0"}} {
		if err := mc.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return err
		}
	}
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("fxpad{%d}", i); tp.ownerOf(shard.Slot(k)) == master {
			key = k
		}
	}
	pid, err := c.pid(ctx, replica)
	if err != nil {
		return err
	}
	if err := c.signal(pid, syscall.SIGTERM); err != nil {
		return err
	}
	if err := waitExit(ctx, pid, 15*time.Second); err != nil {
		return err
	}
	if err := mc.Set(ctx, key, strings.Repeat("x", 64<<10), time.Minute).Err(); err != nil {
		return err
	}
	if err := c.restart(ctx, replica); err != nil {
		return err
	}
	return poll(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		repl, err := c.node(replica).Info(ctx, "replication").Result()
		if err != nil {
			return false, err
		}
		return infoField(repl, "master_link_status") == "up", fmt.Errorf("link %s", infoField(repl, "master_link_status"))
	})
}

//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
)

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
		// Primary reads feed the history checker (every board of a user
		// holds the same total: each event writes national and its province).
		primary := o.Consistency == gateway.ConsistencyPrimary
		if rng.IntN(2) == 0 {
			p, err := s.svc.Top(ctx, s.ref(dim), 10, o)
			for _, en := range p.Entries {
				if primary && err == nil {
					observe(ctx, en.User, en.Points)
				}
			}
			return dim, err
		}
		m, err := s.svc.Member(ctx, s.ref("national"), userName(rng.IntN(users)), o)
		if primary && err == nil {
			observe(ctx, m.User, m.Points)
		}
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
		"audit="+fmt.Sprintf("write errors %d, read errors %d, NOSCRIPT recovered %.0f; %s", cn.writeErrs, cn.readErrs, noscript, a)))
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

package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// ledgerServiceWaiting is a ledger-mode Service over l and the keys under
// prefix whose writes wait for n replicas (redis.wait_replicas).
func ledgerServiceWaiting(t *testing.T, l *ledger.Ledger, prefix string, n int) *Service {
	t.Helper()
	addrs := testcluster.Addrs(t)
	y := fmt.Sprintf("listen: \"127.0.0.1:0\"\nredis:\n  addrs: [%q]\n  prefix: %q\nfamilies:\n%s", addrs[0], prefix, ledgerFamilies)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	c, err := store.NewClient(store.ClientOptions{Addrs: addrs, Cluster: true, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ReloadInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second, WaitReplicas: n, WaitTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Options{Config: cfg, Backend: st, Ledger: l, ShardTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestLedgerWaitReplicas: ledger mode honours redis.wait_replicas. A
// projection that did not reach enough replicas is not an acknowledgement:
// 503 "not replicated yet", and the event stays pending in the ledger (the
// projector still owes Redis its totals). The retry with the same id — here
// through another gateway whose WAIT can be met — is a duplicate that
// re-projects and waits again, and then nothing is left pending.
func TestLedgerWaitReplicas(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	prefix := testcluster.Prefix(t)
	// The test cluster has one replica per master: WAIT 2 never succeeds.
	two, one := ledgerServiceWaiting(t, l, prefix, 2), ledgerServiceWaiting(t, l, prefix, 1)
	ctx := context.Background()
	ev := Event{EventID: "w1", Family: "f", User: "u1", Delta: ptr(int64(7)), Dims: map[string]string{"province": "p1"}}
	_, err := two.ApplyEvent(ctx, ev)
	if rank.CodeOf(err) != rank.CodeUnavailable || !strings.Contains(err.Error(), "not replicated yet; retrying with the same event id is safe") {
		t.Fatalf("wait 2 with one replica per master: %v; want 503 not replicated yet", err)
	}
	pending, err := l.Unprojected(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].EventID != "w1" {
		t.Fatalf("pending after the refused acknowledgement: %+v; want w1", pending)
	}
	res, err := one.ApplyEvent(ctx, ev)
	if err != nil || !res.Duplicate || res.Boards[0].Points != 7 {
		t.Fatalf("retry through a gateway with wait 1: %+v %v; want a duplicate with 7 points", res, err)
	}
	ref := BoardRef{Family: "f", Period: "current", Dimension: "national"}
	if got := topOf(t, one, ref, 10, ReadOptions{Consistency: ConsistencyPrimary}); len(got) != 1 || got[0].Points != 7 {
		t.Fatalf("top after the retry: %+v", got)
	}
	// The duplicate's mark runs after its answer: wait for it, then nothing
	// is left for the projector.
	n, err := one.ProjectPending(ctx, 0)
	if err != nil || n != 0 {
		t.Fatalf("ProjectPending after the acknowledged retry = %d, %v; want 0", n, err)
	}
}

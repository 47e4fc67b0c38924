package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

const (
	directReads = "rankgate_redis_direct_reads_total"
	rerouted    = "rankgate_redis_read_rerouted_total"
)

// everyKindReads: one read of every kind on each of the 16 shards of
// batchBoard — native and scripted seeks (after, around), position.lua,
// native positions and windows, ZMSCORE and members.lua, ZCOUNT, ZCARD and
// HMGET of the metadata hash (filled here for every other member) — grouped
// by the master that serves them, and all of them in one list.
func everyKindReads(t *testing.T, e *env, keys []string) (byNode map[string][]store.ShardRead, all []store.ShardRead) {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	b := shard.Board{Family: "learning", Period: "2026-W34", DimType: shard.National}
	more := int64(30)
	byNode = map[string][]store.ShardRead{}
	for i, k := range keys {
		sk := e.layout.Keys(b, i, len(keys))
		if sk.Z != k {
			t.Fatalf("shard %d: key %s, want %s", i, sk.Z, k)
		}
		for j := i; j < 200; j += 32 {
			if err := e.c.HSet(ctx, sk.Md, fmt.Sprintf("u%03d", j), fmt.Sprintf(`{"n":%d}`, j)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		p := store.Probe{Score: 40, Member: "u050", MoreMin: 41, SameMin: 40}
		rs := []store.ShardRead{
			{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekTop, Limit: 5}},
			{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekAfter, Score: 40, Member: "u100", Limit: 4, MoreMin: &more}},
			{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekAround, Score: 40, Member: "u050", Limit: 3, MoreMin: &p.MoreMin}},
			{Kind: store.ReadPositions, Key: k, Probes: []store.Probe{p, {Score: 0, Member: "zz", MoreMin: 1, SameMin: 0}}},
			{Kind: store.ReadPlace, Key: k, Probes: []store.Probe{p, {Score: 70, Member: "u007", MoreMin: 71, SameMin: 70}}},
			{Kind: store.ReadWindow, Key: k, Probes: []store.Probe{p}, Seek: store.SeekArgs{Limit: 3}},
			{Kind: store.ReadWindow, Key: k, Probes: []store.Probe{p}},
			{Kind: store.ReadScores, Key: k, Members: []string{fmt.Sprintf("u%03d", i), "absent"}},
			{Kind: store.ReadScores, Key: k, Members: []string{fmt.Sprintf("u%03d", i)}, Cols: sk.Cols},
			{Kind: store.ReadCount, Key: k, Lo: 20, Hi: 50},
			{Kind: store.ReadCard, Key: k},
			{Kind: store.ReadHash, Key: sk.Md, Members: []string{fmt.Sprintf("u%03d", i), fmt.Sprintf("u%03d", i+16), "absent"}},
		}
		n := e.s.NodeOf(ctx, k)
		byNode[n] = append(byNode[n], rs...)
		all = append(all, rs...)
	}
	if len(byNode) < 2 {
		t.Fatalf("16 shards on %d masters: want several", len(byNode))
	}
	return byNode, all
}

// checkReplies: got[i] (the reply to reads[i]) equals the reply the same
// read got in the reference list all (the cluster pipeline).
func checkReplies(t *testing.T, what string, all []store.ShardRead, want []store.ShardReply, reads []store.ShardRead, got []store.ShardReply) {
	t.Helper()
	type at struct {
		key string
		n   int
	}
	ref := map[at]store.ShardReply{}
	seen := map[string]int{}
	for i, r := range all {
		ref[at{r.Key, seen[r.Key]}] = want[i]
		seen[r.Key]++
	}
	clear(seen)
	for i, r := range reads {
		w := ref[at{r.Key, seen[r.Key]}]
		seen[r.Key]++
		if w.Err != nil {
			t.Fatalf("reference read %+v failed: %v", r, w.Err)
		}
		if got[i].Err != nil || !reflect.DeepEqual(got[i], w) {
			t.Fatalf("%s: read %d (%+v) = %+v (%v), want %+v", what, i, r, got[i], got[i].Err, w)
		}
	}
}

// TestReadShardsRueidisMatchesClusterPipeline: the reads of one master
// through the rueidis transport answer exactly what the same reads answer
// through go-redis's cluster pipeline, for every read kind (including
// absent members and keys, scripts and native commands), and they did go
// through rueidis (rankgate_redis_direct_reads_total{transport="rueidis"})
// with nothing rerouted. The go-redis transport answers the same.
func TestReadShardsRueidisMatchesClusterPipeline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := batchBoard(t, e, 200)
	ctx := ctxT(t, 20*time.Second)
	byNode, all := everyKindReads(t, e, keys)
	want := make([]store.ShardReply, len(all))
	e.s.ReadShards(ctx, all, false, want) // several masters: the cluster pipeline
	if v := counterValue(t, e.reg, directReads); v != 0 {
		t.Fatalf("%s = %v after a read of several masters", directReads, v)
	}
	if err := e.s.ConnectReaders(ctx); err != nil {
		t.Fatal(err)
	}
	for n, reads := range byNode {
		got := make([]store.ShardReply, len(reads))
		e.s.ReadShards(ctx, reads, false, got)
		checkReplies(t, "rueidis to "+n, all, want, reads, got)
	}
	if v := counterVecValue(t, e.reg, directReads, "transport", store.TransportRueidis); v != float64(len(byNode)) {
		t.Errorf("%s{rueidis} = %v, want %d", directReads, v, len(byNode))
	}
	if v := counterValue(t, e.reg, rerouted); v != 0 {
		t.Errorf("%s = %v, want 0", rerouted, v)
	}

	reg := prometheus.NewRegistry()
	gs, err := store.New(e.c, nil, store.Options{Registerer: reg, ReadTransport: store.TransportGoRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	for n, reads := range byNode {
		got := make([]store.ShardReply, len(reads))
		gs.ReadShards(ctx, reads, false, got)
		checkReplies(t, "go-redis to "+n, all, want, reads, got)
	}
	if v := counterVecValue(t, reg, directReads, "transport", store.TransportGoRedis); v != float64(len(byNode)) {
		t.Errorf("%s{go-redis} = %v, want %d", directReads, v, len(byNode))
	}
}

// TestReadShardsRueidisFallsBack: when the rueidis read of a master fails
// — every command answered MOVED (its reads sent to another master's
// connection), or its connection dead (closed under it) — the whole read is
// sent again through the cluster pipeline and still answers exactly
// (rankgate_redis_read_rerouted_total counts it); once the connection is
// back, reads go through rueidis again.
func TestReadShardsRueidisFallsBack(t *testing.T) {
	t.Parallel()
	addrs := testcluster.Addrs(t)
	var mu sync.Mutex
	var conns []net.Conn // every connection the store's clients dialled
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}
	c, err := store.NewClient(store.ClientOptions{Addrs: addrs, DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, Dialer: dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	s, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys := batchBoard(t, e, 200)
	ctx := ctxT(t, 20*time.Second)
	byNode, all := everyKindReads(t, e, keys)
	want := make([]store.ShardReply, len(all))
	s.ReadShards(ctx, all, false, want)
	if err := s.ConnectReaders(ctx); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for n := range byNode {
		nodes = append(nodes, n)
	}
	from, to := nodes[0], nodes[1]
	reads := byNode[from]
	got := make([]store.ShardReply, len(reads))
	read := func(what string, wantRerouted float64, wantDirect float64) {
		t.Helper()
		clear(got)
		s.ReadShards(ctx, reads, false, got)
		checkReplies(t, what, all, want, reads, got)
		if v := counterValue(t, reg, rerouted); v != wantRerouted {
			t.Fatalf("%s: %s = %v, want %v", what, rerouted, v, wantRerouted)
		}
		if v := counterVecValue(t, reg, directReads, "transport", store.TransportRueidis); v != wantDirect {
			t.Fatalf("%s: %s{rueidis} = %v, want %v", what, directReads, v, wantDirect)
		}
	}
	read("rueidis", 0, 1)

	undo := store.AliasDirect(s, from, to)
	read("rueidis to the wrong master (MOVED)", 1, 2)
	undo()
	read("rueidis again", 1, 3)

	// Close every connection dialled so far: go-redis's (it redials) and
	// the rueidis client's one connection to each master.
	mu.Lock()
	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	mu.Unlock()
	read("rueidis on a dead connection", 2, 4)
	// For the retry interval after that failure the master's reads go
	// through go-redis (rueidis would redial inside every read and make each
	// wait for the dial): no rueidis read, nothing rerouted, the failure
	// counted.
	goRedis := counterVecValue(t, reg, directReads, "transport", store.TransportGoRedis)
	read("within the retry interval: go-redis", 2, 4)
	if v := counterVecValue(t, reg, directReads, "transport", store.TransportGoRedis); v != goRedis+1 {
		t.Fatalf("%s{go-redis} = %v, want %v", directReads, v, goRedis+1)
	}
	if v := counterValue(t, reg, "rankgate_redis_direct_dial_errors_total"); v != 1 {
		t.Fatalf("rankgate_redis_direct_dial_errors_total = %v, want 1 (the dead connection)", v)
	}
	store.ForgetBroken(s)
	read("rueidis redialled", 2, 5)
}

// TestConnectReadersAfterClose: a closed store dials nothing and says so.
func TestConnectReadersAfterClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, err := store.New(e.c, nil, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.ConnectReaders(ctxT(t, 5*time.Second)); err == nil {
		t.Fatal("ConnectReaders after Close: no error")
	}
	s.Close() // twice is fine
}

// faultyConn is a connection the test breaks on cue: after hang it
// swallows every write (the node never answers).
type faultyConn struct {
	net.Conn
	hung atomic.Bool
}

func (c *faultyConn) hang() { c.hung.Store(true) }

func (c *faultyConn) Write(b []byte) (int, error) {
	if c.hung.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// TestRueidisFailureKeepsNodeOutOfSlotReload: a rueidis read of master X
// that meets a network error or a timeout records X in the NodeHealth the
// store shares with its go-redis client, so the slot-map reload it asks for
// does not ask X for CLUSTER SLOTS (X's node client refuses it at once, as
// after a go-redis timeout) — without the record the reload could ask the
// hung X first and wait for it. A caller that went away or an error reply
// says nothing about X: X is still asked.
func TestRueidisFailureKeepsNodeOutOfSlotReload(t *testing.T) {
	t.Parallel()
	addrs := testcluster.Addrs(t)
	prefix := testcluster.Prefix(t)
	cases := []struct {
		name string
		// fail breaks the read of X — conn is its rueidis connection, y
		// another master — and returns the read's context.
		fail     func(t *testing.T, s *store.Store, conn *faultyConn, x, y string) context.Context
		wantSkip bool
	}{
		{"connection closed under the read", func(t *testing.T, _ *store.Store, conn *faultyConn, _, _ string) context.Context {
			_ = conn.Conn.Close()
			return ctxT(t, 5*time.Second)
		}, true},
		{"master hung: the read's deadline passes", func(t *testing.T, _ *store.Store, conn *faultyConn, _, _ string) context.Context {
			conn.hang()
			return ctxT(t, 300*time.Millisecond)
		}, true},
		{"caller went away (context.Canceled)", func(t *testing.T, _ *store.Store, _ *faultyConn, _, _ string) context.Context {
			// rueidis answers every command with the context's error. (It
			// sends a lone DoMulti under the context's deadline only: a
			// cancel while that read waits is not seen.)
			ctx, cancel := context.WithCancel(ctxT(t, 5*time.Second))
			cancel()
			return ctx
		}, false},
		{"error reply: MOVED from another master's connection", func(t *testing.T, s *store.Store, _ *faultyConn, x, y string) context.Context {
			t.Cleanup(store.AliasDirect(s, x, y))
			return ctxT(t, 5*time.Second)
		}, false},
		{"client closed by the store (a prune pass, Close) under the read", func(t *testing.T, s *store.Store, _ *faultyConn, x, _ string) context.Context {
			store.CloseDirect(s, x) // the read meets rueidis.ErrClosing
			return ctxT(t, 5*time.Second)
		}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			health := new(store.NodeHealth)
			c, err := store.NewClient(store.ClientOptions{Addrs: addrs, DialTimeout: 2 * time.Second,
				ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, Health: health})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			cc := c.(*redis.ClusterClient)
			reg := prometheus.NewRegistry()
			s, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second, Registerer: reg, Health: health})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			ctx := ctxT(t, 10*time.Second)
			if err := s.ConnectReaders(ctx); err != nil {
				t.Fatal(err)
			}
			// key on master X (its go-redis node client: node), other on Y.
			key := fmt.Sprintf("%s:health:%d", prefix, i)
			node, err := cc.MasterForKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			x, y, otherKey := node.Options().Addr, "", ""
			for j := 0; y == "" || y == x; j++ {
				otherKey = fmt.Sprintf("%s:other:%d", prefix, j)
				if y = s.NodeOf(ctx, otherKey); j == 1000 {
					t.Fatalf("no key off master %s", x)
				}
			}
			// Y answered a slot-map query lately, as the nodes of a running
			// gateway do (a reload asks one node per interval): a reload that
			// leaves X out has Y to ask.
			yNode, err := cc.MasterForKey(ctx, otherKey)
			if err != nil {
				t.Fatal(err)
			}
			//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client reloads its slot map with.
			if err := yNode.ClusterSlots(ctx).Err(); err != nil {
				t.Fatalf("CLUSTER SLOTS to %s: %v", y, err)
			}
			var mu sync.Mutex
			var conn *faultyConn
			err = store.DialDirect(s, node, func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				mu.Lock()
				defer mu.Unlock()
				conn = &faultyConn{Conn: nc}
				return conn, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			read := func(ctx context.Context) {
				t.Helper()
				out := make([]store.ShardReply, 1)
				s.ReadShards(ctx, []store.ShardRead{{Kind: store.ReadCard, Key: key}}, false, out)
			}
			slots := func() error {
				//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client reloads its slot map with: the command under test.
				return node.ClusterSlots(ctxT(t, 5*time.Second)).Err()
			}
			read(ctx)
			if err := slots(); err != nil {
				t.Fatalf("CLUSTER SLOTS to %s before the failure: %v", x, err)
			}

			mu.Lock()
			rc := conn
			mu.Unlock()
			read(tc.fail(t, s, rc, x, y))
			if v := counterVecValue(t, reg, directReads, "transport", store.TransportRueidis); v != 2 {
				t.Fatalf("%s{rueidis} = %v, want 2: the failing read did not go through rueidis", directReads, v)
			}
			err = slots()
			switch {
			case tc.wantSkip && (err == nil || !strings.Contains(err.Error(), "not asked for the slot map")):
				t.Fatalf("CLUSTER SLOTS to %s right after its rueidis read failed: %v; want it refused (%s left out of the reload)", x, err, x)
			case !tc.wantSkip && err != nil:
				t.Fatalf("CLUSTER SLOTS to %s: %v; want an answer (this failure says nothing about %s)", x, err, x)
			}
		})
	}
}

// gaugeValue reads a gauge from a registry; 0 when absent.
func gaugeValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// TestRueidisClientOfANodeNoLongerMasterIsClosed: the rueidis client of an
// address that is not a master — here a replica's, which is what a master
// demoted by a failover, or one whose slots all moved away, looks like — is
// closed within a couple of prune intervals (Options.ReadClientPrune) of
// reads, and rankgate_redis_direct_clients drops by one; the masters keep
// their clients (the same ones), and every read meanwhile answers exactly
// through rueidis, nothing rerouted.
func TestRueidisClientOfANodeNoLongerMasterIsClosed(t *testing.T) {
	t.Parallel()
	const clients = "rankgate_redis_direct_clients"
	e := newEnv(t)
	keys := batchBoard(t, e, 200)
	ctx := ctxT(t, 30*time.Second)
	byNode, all := everyKindReads(t, e, keys)
	want := make([]store.ShardReply, len(all))
	e.s.ReadShards(ctx, all, false, want)

	reg := prometheus.NewRegistry()
	s, err := store.New(e.c, nil, store.Options{Timeout: 5 * time.Second, Registerer: reg, ReadClientPrune: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ConnectReaders(ctx); err != nil {
		t.Fatal(err)
	}
	masters := store.DirectClients(s)
	if len(masters) != len(byNode) {
		t.Fatalf("%d rueidis clients after ConnectReaders, want one per master (%d)", len(masters), len(byNode))
	}
	var mu sync.Mutex
	var replica *redis.Client
	err = e.cc.ForEachSlave(ctx, func(_ context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		replica = n
		return nil
	})
	if err != nil || replica == nil {
		t.Fatalf("no replica: %v", err)
	}
	addr := replica.Options().Addr
	if err := store.DialDirect(s, replica, (&net.Dialer{Timeout: 2 * time.Second}).DialContext); err != nil {
		t.Fatal(err)
	}
	gone := store.DirectClients(s)[addr]
	if v := gaugeValue(t, reg, clients); v != float64(len(byNode)+1) {
		t.Fatalf("%s = %v with the replica's client, want %d", clients, v, len(byNode)+1)
	}

	rounds := 0
	soon.Eventually(t, 20*time.Second, func() error {
		for n, reads := range byNode {
			got := make([]store.ShardReply, len(reads))
			s.ReadShards(ctx, reads, false, got)
			checkReplies(t, "rueidis to "+n, all, want, reads, got)
		}
		rounds++
		if _, ok := store.DirectClients(s)[addr]; ok {
			return fmt.Errorf("the rueidis client of replica %s is still open after %d rounds of reads", addr, rounds)
		}
		return nil
	})
	if v := gaugeValue(t, reg, clients); v != float64(len(byNode)) {
		t.Errorf("%s = %v after the prune, want %d", clients, v, len(byNode))
	}
	if err := gone.Do(ctx, gone.B().Ping().Build()).Error(); !errors.Is(err, rueidis.ErrClosing) {
		t.Errorf("PING on the dropped client of %s: %v, want %v (closed)", addr, err, rueidis.ErrClosing)
	}
	now := store.DirectClients(s)
	for a, c := range masters {
		if now[a] != c {
			t.Errorf("master %s: its rueidis client was replaced or dropped", a)
		}
	}
	if v := counterVecValue(t, reg, directReads, "transport", store.TransportRueidis); v != float64(rounds*len(byNode)) {
		t.Errorf("%s{rueidis} = %v, want %d", directReads, v, rounds*len(byNode))
	}
	if v := counterValue(t, reg, rerouted); v != 0 {
		t.Errorf("%s = %v, want 0", rerouted, v)
	}
}

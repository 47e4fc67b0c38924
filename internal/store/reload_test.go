package store

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// hungNode accepts connections and reads whatever is sent, never answering
// (a stopped or partitioned Redis node); it returns its address and what it
// has received so far.
func hungNode(t *testing.T) (string, func() string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got strings.Builder
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 512)
				for {
					n, err := c.Read(buf)
					mu.Lock()
					got.Write(buf[:n])
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String(), func() string {
		mu.Lock()
		defer mu.Unlock()
		return got.String()
	}
}

// clusterSlots sends the command go-redis reloads its slot map with.
func clusterSlots(c *redis.Client) error {
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client runs to reload its slot map: the command under test.
	return c.ClusterSlots(context.Background()).Err()
}

// otherNode stands for the cluster's other nodes in a NodeHealth.
const otherNode = "127.0.0.1:1"

// hooked is a one-connection client of addr with the cluster node hook,
// which keeps addr's record in health. health also knows another node that
// answered a slot-map query just now and never failed, as a cluster's record
// does: a reload that leaves addr out has another node to ask.
func hooked(t *testing.T, addr string, readTimeout time.Duration, health *NodeHealth) *redis.Client {
	t.Helper()
	stampNow(health.answeredRecord(otherNode))
	// The cluster client only receives reload requests: nothing listens there.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, DialTimeout: 100 * time.Millisecond})
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: readTimeout, PoolSize: 1, ContextTimeoutEnabled: true,
		MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	c.AddHook(reloadOnDialError{cluster: cc, log: slog.New(slog.DiscardHandler), addr: addr,
		health: health, failedAt: health.record(addr), down: health.downRecord(addr), answered: health.answeredRecord(addr),
		slotsTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close(); _ = cc.Close() })
	return c
}

// TestSlotMapReloadPassesAHungNode: go-redis reloads the slot map by asking
// one node after another with no deadline of its own. A hung node must
// neither hold the reload for its pool timeout (every connection stuck) nor
// be asked again right after it timed out.
func TestSlotMapReloadPassesAHungNode(t *testing.T) {
	t.Parallel()
	addr, received := hungNode(t)

	// Its one connection is stuck in a command: the slot-map query ends at
	// its own deadline, not after go-redis's pool timeout (read timeout +
	// 1 s), and then the node is left out.
	c := hooked(t, addr, 5*time.Second, new(NodeHealth))
	stuck := make(chan error, 1)
	go func() { stuck <- c.Ping(context.Background()).Err() }()
	for i := 0; received() == ""; i++ { // its handshake (HELLO), then PING
		if i == 100 {
			t.Fatalf("the hung node received %q", received())
		}
		time.Sleep(10 * time.Millisecond)
	}
	err := clusterSlots(c)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slot-map query of a node whose connections are stuck: %v; want its own deadline (not %v)", err, redis.ErrPoolTimeout)
	}
	err = clusterSlots(c)
	if err == nil || !strings.Contains(err.Error(), "not asked for the slot map") {
		t.Fatalf("slot-map query right after that node timed out: %v; want it skipped", err)
	}

	// A command that timed out (not a slot-map query) marks the node too.
	d := hooked(t, addr, 100*time.Millisecond, new(NodeHealth))
	if err := d.Get(context.Background(), "k").Err(); err == nil {
		t.Fatal("GET on a hung node answered")
	}
	before := strings.Count(received(), "slots")
	err = clusterSlots(d)
	if err == nil || !strings.Contains(err.Error(), "not asked for the slot map") {
		t.Fatalf("slot-map query after a timed-out GET: %v; want it skipped", err)
	}
	if after := strings.Count(received(), "slots"); after != before {
		t.Errorf("the skipped node received CLUSTER SLOTS anyway (%d → %d)", before, after)
	}
	_ = c.Close()
	<-stuck
}

// upClient stands for a connected rueidis client; get only hands it out.
type upClient struct{ rueidis.Client }

// TestNodeHealthSharedByTransports: go-redis's node client and the rueidis
// read transport keep one failure record per node. What go-redis saw of a
// master decides whether its reads leave rueidis for the retry interval
// (errBroken: they go through go-redis): a failed dial does (the master looks
// unreachable, and rueidis would redial inside every read); a command that
// only timed out does not (a slow script on a live master says nothing about
// its reads) — yet both keep the node out of the next slot-map reload. (A
// rueidis failure keeping the node out of go-redis's slot-map reload:
// TestRueidisFailureKeepsNodeOutOfSlotReload.)
func TestNodeHealthSharedByTransports(t *testing.T) {
	t.Parallel()
	hung, _ := hungNode(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	_ = l.Close() // nothing listens there now: dials are refused
	cases := []struct {
		name       string
		addr       string
		wantBroken bool
	}{
		{"a command timed out on a hung master", hung, false},
		{"a dial was refused", refused, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			health := new(NodeHealth)
			node := hooked(t, c.addr, 100*time.Millisecond, health)
			d := newDirectClients(slog.New(slog.DiscardHandler), prometheus.NewCounter(prometheus.CounterOpts{Name: "dial_errors"}), health)
			dc := d.newClient(c.addr)
			dc.c = upClient{}
			d.clients[c.addr] = dc
			if rc, _, err := d.get(node); rc == nil || err != nil {
				t.Fatalf("rueidis client of a master that never failed: %v, %v", rc, err)
			}
			if err := node.Get(context.Background(), "k").Err(); err == nil {
				t.Fatal("GET answered")
			}
			rc, _, err := d.get(node)
			if broken := errors.Is(err, errBroken); broken != c.wantBroken || broken == (rc != nil) {
				t.Fatalf("rueidis client right after go-redis's GET failed: %v, %v; want broken %v", rc, err, c.wantBroken)
			}
			if err := clusterSlots(node); err == nil || !strings.Contains(err.Error(), "not asked for the slot map") {
				t.Fatalf("slot-map query right after: %v; want the node left out", err)
			}
		})
	}
}

// TestSlotMapReloadAsksAllWhenAllFailed: a node that failed just now is left
// out of a slot-map reload only while the record knows another node that
// answered a slot-map query lately and did not fail — when every node failed
// at once (a stall of the gateway itself), or the only other addresses are
// not live nodes (a seed's name, a departed node), the reload asks the node
// anyway, bounded by its own deadline, rather than no node at all.
func TestSlotMapReloadAsksAllWhenAllFailed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		other func(h *NodeHealth) // what the record says of the other node
		asked bool
	}{
		{"another node answered lately and is clear", func(h *NodeHealth) {}, false},
		{"the other node failed too", func(h *NodeHealth) { h.failed(otherNode) }, true},
		{"the other node never answered", func(h *NodeHealth) { h.answeredRecord(otherNode).Store(0) }, true},
		{"the other node answered long ago", func(h *NodeHealth) {
			h.answeredRecord(otherNode).Store(time.Now().Add(-2 * slotsLive).UnixNano())
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr, received := hungNode(t)
			health := new(NodeHealth)
			node := hooked(t, addr, 100*time.Millisecond, health)
			health.failed(addr)
			c.other(health)
			before := len(received())
			err := clusterSlots(node)
			if skipped := err != nil && strings.Contains(err.Error(), "not asked for the slot map"); skipped == c.asked {
				t.Fatalf("slot-map query: %v; want asked %v", err, c.asked)
			}
			if !c.asked {
				return
			}
			if !timedOut(err) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("slot-map query of a hung node: %v; want a timeout", err)
			}
			for i := 0; len(received()) == before; i++ { // the connection's handshake, at least
				if i == 100 {
					t.Fatal("the node was never sent anything: the query did not go out")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestSlotMapQueryAfterTheReloadsDeadline: a node asked for the slot map
// after the reload's own deadline passed (other nodes used it up) is neither
// sent anything nor marked failed — the expired deadline says nothing of it.
func TestSlotMapQueryAfterTheReloadsDeadline(t *testing.T) {
	t.Parallel()
	addr, received := hungNode(t)
	health := new(NodeHealth)
	node := hooked(t, addr, time.Second, health)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client runs to reload its slot map: the command under test.
	if err := node.ClusterSlots(ctx).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slot-map query under a reload that is over: %v; want its context's error", err)
	}
	if ago, failed := stampedWithin(health.record(addr), slotsSkip); failed {
		t.Fatalf("the node was marked failed %s ago by a reload that was over", ago)
	}
	if got := received(); got != "" {
		t.Fatalf("the node received %q", got)
	}
	// A query that did go out and timed out on its own time marks it.
	if err := clusterSlots(node); !timedOut(err) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slot-map query of a hung node: %v; want a timeout", err)
	}
	if _, failed := stampedWithin(health.record(addr), slotsSkip); !failed {
		t.Fatal("a slot-map query that timed out did not mark the node")
	}
}

package store

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// namedClient stands for a connected rueidis client; sweep only hands it
// back to be closed.
type namedClient struct {
	rueidis.Client
	name string
}

func (namedClient) Close() {}

func newTestDirect() *directClients {
	return newDirectClients(slog.New(slog.DiscardHandler), prometheus.NewCounter(prometheus.CounterOpts{Name: "dial_errors"}), new(NodeHealth))
}

// TestSweepClosesAfterAFullInterval: a client is dropped only when a pass
// finds its address no master and a pass at least one interval before did
// too — one pass of a failover in flight, or a master that comes back,
// closes nothing — and a client still dialling is never dropped; a failed
// dial's entry is dropped with nothing to close. Passes at t0, t0+I/2,
// t0+I, t0+2I (I: the interval).
func TestSweepClosesAfterAFullInterval(t *testing.T) {
	t.Parallel()
	const every = time.Minute
	t0 := time.Unix(1_700_000_000, 0)
	passes := []time.Time{t0, t0.Add(every / 2), t0.Add(every), t0.Add(2 * every)}
	const (
		up = iota
		dialling
		failed
	)
	cases := []struct {
		name   string
		state  int
		master []bool // at each pass
		// droppedAt: the pass after which the address has no entry (-1:
		// kept); closed: its client is handed back to be closed then.
		droppedAt int
		closed    bool
	}{
		{"master throughout", up, []bool{true, true, true, true}, -1, false},
		{"no master from the first pass: dropped a full interval later", up, []bool{false, false, false, false}, 2, true},
		{"no master since the second pass: not dropped half an interval later", up, []bool{true, false, false, false}, 3, true},
		{"a master again in between (failover in flight)", up, []bool{false, true, false, true}, -1, false},
		{"no master at the last pass only", up, []bool{true, true, true, false}, -1, false},
		{"still dialling: left to a later pass", dialling, []bool{false, false, false, false}, -1, false},
		{"failed dial: dropped, nothing to close", failed, []bool{false, false, false, false}, 2, false},
	}
	d := newTestDirect()
	d.pruneEvery = every
	for _, tc := range cases {
		dc := d.newClient(tc.name)
		switch tc.state {
		case up:
			dc.c = namedClient{name: tc.name}
		case failed:
			dc.err, dc.failedAt = errors.New("refused"), t0.Add(-time.Second)
		}
		d.clients[tc.name] = dc
	}
	for i, at := range passes {
		masters := map[string]bool{}
		for _, tc := range cases {
			masters[tc.name] = tc.master[i]
		}
		var closed []string
		for _, c := range d.sweep(masters, at) {
			closed = append(closed, c.(namedClient).name)
		}
		for _, tc := range cases {
			_, kept := d.clients[tc.name]
			if wantKept := tc.droppedAt < 0 || i < tc.droppedAt; kept != wantKept {
				t.Errorf("%s: after pass %d kept = %v, want %v", tc.name, i, kept, wantKept)
			}
			if wantClosed := tc.closed && i == tc.droppedAt; slices.Contains(closed, tc.name) != wantClosed {
				t.Errorf("%s: pass %d closed it = %v, want %v", tc.name, i, !wantClosed, wantClosed)
			}
		}
	}
}

// TestPrunePasses: a pass starts from a read at most once per interval and
// never two at once; a pass that cannot list the masters drops nothing; and
// close ends a pass under way (its context is cancelled) and waits for it.
func TestPrunePasses(t *testing.T) {
	t.Parallel()
	d := newTestDirect()
	d.pruneEvery = time.Hour
	calls := make(chan context.Context, 4)
	release := make(chan error)
	d.masters = func(ctx context.Context) (map[string]bool, error) {
		calls <- ctx
		return nil, <-release
	}
	dc := d.newClient("gone")
	dc.c, dc.goneAt = namedClient{name: "gone"}, time.Now().Add(-2*time.Hour)
	d.clients["gone"] = dc
	start := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.maybePrune()
	}

	start() // within the interval of the store's start: no pass
	select {
	case <-calls:
		t.Fatal("a pass started within the interval after the start")
	default:
	}
	d.mu.Lock()
	d.prunedAt = time.Now().Add(-2 * time.Hour)
	d.mu.Unlock()
	start()
	<-calls
	d.mu.Lock()
	d.prunedAt = time.Now().Add(-2 * time.Hour)
	d.mu.Unlock()
	start() // the interval is over but a pass is under way: no second
	release <- errors.New("no cluster")
	d.wg.Wait() // the failed pass ends
	d.mu.Lock()
	if d.clients["gone"] == nil {
		t.Error("a pass that could not list the masters dropped a client")
	}
	d.mu.Unlock()
	select {
	case <-calls:
		t.Fatal("a second pass started while one was under way")
	default:
	}

	start()
	ctx := <-calls
	closed := make(chan struct{})
	go func() {
		d.close()
		close(closed)
	}()
	<-ctx.Done() // close cancels the pass's context
	select {
	case <-closed:
		t.Fatal("close returned while a pass was under way")
	default:
	}
	release <- ctx.Err()
	<-closed
	if d.count() != 0 {
		t.Errorf("count after close = %d, want 0", d.count())
	}
}

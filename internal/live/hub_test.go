package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/soon"
)

// fakeReads answers from a map of member → points and counts its calls.
type fakeReads struct {
	mu     sync.Mutex
	points map[string]int64
	tops   atomic.Int64
	member atomic.Int64
	fail   error
}

var _ Reads = (*fakeReads)(nil)

func (f *fakeReads) set(user string, p int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.points[user] = p
}

func (f *fakeReads) Top(_ context.Context, b gateway.BoardRef, n int, _ gateway.ReadOptions) (gateway.Page, error) {
	f.tops.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return gateway.Page{}, f.fail
	}
	p := gateway.Page{ReadMeta: gateway.ReadMeta{Board: b.Family, Source: gateway.SourceCache, AsOf: time.Now()}}
	for u, pts := range f.points {
		p.Entries = append(p.Entries, rank.Entry{User: u, Points: pts})
	}
	if len(p.Entries) > n {
		p.Entries = p.Entries[:n]
	}
	return p, nil
}

func (f *fakeReads) Member(_ context.Context, b gateway.BoardRef, user string, _ gateway.ReadOptions) (gateway.MemberStanding, error) {
	f.member.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	pts, ok := f.points[user]
	if !ok {
		return gateway.MemberStanding{}, rank.Errorf(rank.CodeNotRanked, "%s is not ranked", user)
	}
	return gateway.MemberStanding{ReadMeta: gateway.ReadMeta{Board: b.Family, AsOf: time.Now()}, User: user, Points: pts}, nil
}

func (f *fakeReads) Around(_ context.Context, b gateway.BoardRef, user string, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return gateway.Page{ReadMeta: gateway.ReadMeta{Board: b.Family, AsOf: time.Now()},
		Entries: []rank.Entry{{User: user, Points: f.points[user]}}}, nil
}

func newTestHub(t *testing.T, f *fakeReads, o Options) (*Hub, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Reads, o.Registerer = f, reg
	if o.Interval == nil {
		o.Interval = func(string) time.Duration { return 20 * time.Millisecond }
	}
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, reg
}

var testBoard = gateway.BoardRef{Family: "f", Period: "current", Dimension: "national"}

func next(t *testing.T, s *Subscription) Event {
	t.Helper()
	select {
	case <-s.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5s")
	}
	data, ok := s.Next()
	if !ok {
		t.Fatal("ready without an answer")
	}
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestSharedComputation: 50 subscribers of one Top shape and 50 following
// one member cost one Top and one Member read per round, not one each.
func TestSharedComputation(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"a": 1}}
	h, _ := newTestHub(t, f, Options{})
	var subs []*Subscription
	for i := range 100 {
		q := Query{Board: testBoard, Top: 5}
		if i%2 == 1 {
			q.Member, q.Radius = "a", 1
		}
		s, err := h.Subscribe(context.Background(), fmt.Sprint("tok", i%7), q)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	for _, s := range subs {
		next(t, s)
	}
	t0, m0 := f.tops.Load(), f.member.Load()
	// Ten rounds later, about ten reads of each kind.
	soon.Eventually(t, 5*time.Second, func() error {
		if d := f.tops.Load() - t0; d < 10 {
			return fmt.Errorf("%d rounds", d)
		}
		return nil
	})
	dt, dm := f.tops.Load()-t0, f.member.Load()-m0
	if dm < dt-1 || dm > dt+1 {
		t.Fatalf("%d member reads in %d rounds (100 subscribers)", dm, dt)
	}
	// Nothing changed: nothing pending.
	for _, s := range subs {
		if _, ok := s.Next(); ok {
			t.Fatal("an answer without a change")
		}
	}
	f.set("b", 9)
	for _, s := range subs {
		if ev := next(t, s); len(ev.Top) == 0 {
			t.Fatal("no top")
		}
	}
	for _, s := range subs {
		s.Close()
	}
	if n := h.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after closing all", n)
	}
	// The board's loop stopped with its last subscriber.
	h.mu.Lock()
	nb := len(h.boards)
	h.mu.Unlock()
	if nb != 0 {
		t.Fatalf("%d boards held", nb)
	}
}

func TestMemberNotRanked(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"a": 1}}
	h, _ := newTestHub(t, f, Options{})
	s, err := h.Subscribe(context.Background(), "", Query{Board: testBoard, Top: 3, Member: "zed", Radius: 2})
	if err != nil {
		t.Fatal(err)
	}
	ev := next(t, s)
	if string(ev.Member) != "null" || string(ev.Around) != "null" {
		t.Fatalf("member %s around %s", ev.Member, ev.Around)
	}
	f.set("zed", 3)
	ev = next(t, s)
	var m gateway.MemberStanding
	if err := json.Unmarshal(ev.Member, &m); err != nil || m.User != "zed" || m.Points != 3 {
		t.Fatalf("member %s", ev.Member)
	}
}

// TestFirstReadFails: the shape's first read failing is the subscriber's
// error, and frees its place.
func TestFirstReadFails(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{}, fail: rank.Invalid("limit", "too big")}
	h, reg := newTestHub(t, f, Options{})
	_, err := h.Subscribe(context.Background(), "", Query{Board: testBoard, Top: 5000})
	if rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Fatalf("err %v", err)
	}
	if n := h.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers", n)
	}
	// A board that never answered leaves no family label behind.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "family" {
					t.Errorf("%s has a series for family %q", mf.GetName(), lp.GetValue())
				}
			}
		}
	}
}

func TestLimitsAndClose(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"a": 1}}
	h, _ := newTestHub(t, f, Options{MaxSubscribers: 3, MaxPerToken: 2})
	q := Query{Board: testBoard, Top: 1}
	a1, err := h.Subscribe(context.Background(), "A", q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(context.Background(), "A", q); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(context.Background(), "A", q); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("A's third: %v", err)
	}
	if _, err := h.Subscribe(context.Background(), "B", q); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(context.Background(), "C", q); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("fourth: %v", err)
	}
	a1.Close()
	a1.Close() // idempotent
	if _, err := h.Subscribe(context.Background(), "C", q); err != nil {
		t.Fatalf("after a close: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); h.Close() }()
	select {
	case <-a1.Done():
		t.Fatal("a closed subscription is not ended again")
	default:
	}
	// Close waits for no handler: every loop stops at once.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := h.Subscribe(context.Background(), "D", q); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("after Close: %v", err)
	}
}

func TestNilReads(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("New without Reads: %v", err)
	}
}

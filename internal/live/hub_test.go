package live

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
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
	// A board's order: points descending, then the member.
	slices.SortFunc(p.Entries, func(a, b rank.Entry) int {
		if c := cmp.Compare(b.Points, a.Points); c != 0 {
			return c
		}
		return strings.Compare(a.User, b.User)
	})
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

// manualTick is a round clock the test drives: a send on c is accepted only
// once the loop waits for it, that is, once the round before it is done.
type manualTick struct{ c chan time.Time }

func (m *manualTick) tick(time.Duration) (<-chan time.Time, func()) { return m.c, func() {} }

// rounds runs n rounds and waits until they are done (one more tick taken:
// the round after them may be under way).
func (m *manualTick) rounds(t *testing.T, n int) {
	t.Helper()
	for range n + 1 {
		select {
		case m.c <- time.Now():
		case <-time.After(5 * time.Second):
			t.Fatal("the board's loop took no tick within 5s")
		}
	}
}

// TestSharedComputation: 50 subscribers of one Top shape and 50 following
// one member cost one Top and one Member read per round, not one each.
func TestSharedComputation(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"a": 1}}
	clock := &manualTick{c: make(chan time.Time)}
	h, _ := newTestHub(t, f, Options{Tick: clock.tick})
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
	// The first answers: one read per shape (a shape's first subscriber
	// asks at once; the others got its answer).
	if tops, members := f.tops.Load(), f.member.Load(); tops != 2 || members != 1 {
		t.Fatalf("first answers of 100 subscribers: %d Top reads, %d Member reads; want 2 and 1", tops, members)
	}
	t0, m0 := f.tops.Load(), f.member.Load()
	clock.rounds(t, 10) // the 11th round may be under way
	dt, dm := f.tops.Load()-t0, f.member.Load()-m0
	if dt < 10 || dt > 11 || dm < 10 || dm > 11 {
		t.Fatalf("10 rounds for 100 subscribers: %d Top reads, %d Member reads; want 10 each", dt, dm)
	}
	// Nothing changed: nothing pending.
	for _, s := range subs {
		if _, ok := s.Next(); ok {
			t.Fatal("an answer without a change")
		}
	}
	f.set("b", 9)
	clock.rounds(t, 1)
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

// TestOverloaded: a subscriber whose pending answer waits past MaxBehind
// (on the hub's clock) is ended as overloaded; the others are not.
func TestOverloaded(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"a": 1}}
	clock := &manualTick{c: make(chan time.Time)}
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).UnixNano())
	h, _ := newTestHub(t, f, Options{Tick: clock.tick, MaxBehind: 10 * time.Second,
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	q := Query{Board: testBoard, Top: 5}
	slow, err := h.Subscribe(context.Background(), "A", q)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := h.Subscribe(context.Background(), "B", q)
	if err != nil {
		t.Fatal(err)
	}
	// Both have their snapshot pending (since T0); fast takes it.
	if _, ok := fast.Next(); !ok {
		t.Fatal("no snapshot pending")
	}
	now.Add(int64(5 * time.Second))
	f.set("b", 2)
	clock.rounds(t, 1) // an update at T0+5: slow's replaces its snapshot, still pending since T0
	if _, ok := fast.Next(); !ok {
		t.Fatal("no update for the fast subscriber")
	}
	now.Add(int64(6 * time.Second)) // T0+11: slow is 11 s behind
	clock.rounds(t, 1)
	select {
	case <-slow.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the slow subscriber was not ended")
	}
	if d, ok := slow.Next(); !ok || !strings.Contains(string(d), `"user":"b"`) {
		t.Fatalf("the slow subscriber's pending answer is not the newest: %s", d)
	}
	if slow.Reason() != ReasonOverloaded {
		t.Fatalf("reason %q", slow.Reason())
	}
	select {
	case <-fast.Done():
		t.Fatal("the fast subscriber was ended")
	default:
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

// TestOneReadPerFollowedMember: subscribers following different members
// cost one standing read per member per round, however many follow each.
func TestOneReadPerFollowedMember(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"m0": 1, "m1": 2, "m2": 3, "m3": 4, "m4": 5}}
	clock := &manualTick{c: make(chan time.Time)}
	h, _ := newTestHub(t, f, Options{Tick: clock.tick})
	for i := range 20 {
		if _, err := h.Subscribe(context.Background(), "", Query{Board: testBoard, Top: 3, Member: fmt.Sprint("m", i%5), Radius: 1}); err != nil {
			t.Fatal(err)
		}
	}
	t0, m0 := f.tops.Load(), f.member.Load()
	clock.rounds(t, 4) // the 5th round may be under way
	dt, dm := f.tops.Load()-t0, f.member.Load()-m0
	if dt < 4 || dt > 5 || dm < 20 || dm > 25 {
		t.Fatalf("4 rounds, 5 followed members, 20 subscribers: %d Top reads, %d Member reads; want 4 and 20", dt, dm)
	}
}

// TestEventDataSameAsMarshal: the spliced event data is byte for byte what
// json.Marshal of an Event gives.
func TestEventDataSameAsMarshal(t *testing.T) {
	t.Parallel()
	lag := int64(7)
	page := gateway.Page{ReadMeta: gateway.ReadMeta{Board: "w/2026-W49/\"national\"", Source: gateway.SourceIndex,
		AsOf: time.Date(2026, 12, 4, 14, 0, 0, 123456789, time.UTC), LagMs: &lag},
		Entries: []rank.Entry{{User: "u<1>", Points: 42, Position: 0, Rank: 1}, {User: "ü2", Points: 41, Position: 1, Rank: 2}}}
	top := &topAnswer{page: page}
	var err error
	if top.json, err = json.Marshal(page); err != nil {
		t.Fatal(err)
	}
	// The raw parts come from json.Marshal, as in the hub (escaped, compact).
	standing, err := json.Marshal(gateway.MemberStanding{ReadMeta: page.ReadMeta, User: "u<1>", Points: 42, Rank: 1, Members: 2})
	if err != nil {
		t.Fatal(err)
	}
	around, err := json.Marshal(gateway.Page{ReadMeta: page.ReadMeta, Entries: page.Entries[:1]})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *memberAnswer
	}{
		{"top only", nil},
		{"member", &memberAnswer{standing: standing, around: around}},
		{"member not ranked", &memberAnswer{standing: json.RawMessage("null"), around: json.RawMessage("null")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := Event{Board: page.Board, AsOf: page.AsOf, Source: page.Source, Top: top.json}
			if tc.m != nil {
				ev.Member, ev.Around = tc.m.standing, tc.m.around
			}
			want, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if got := eventData(top, tc.m); string(got) != string(want) {
				t.Fatalf("eventData:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestDrainWaitsForStreams: after Close, Drain returns only once every
// subscription has been closed by its stream.
func TestDrainWaitsForStreams(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"u1": 1}}
	h, err := New(Options{Reads: f})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Subscribe(context.Background(), "", Query{Board: gateway.BoardRef{Family: "f", Period: "p", Dimension: "d"}, Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	select {
	case <-s.Done():
	default:
		t.Fatal("Close did not end the subscription")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with a stream still open: %v, want deadline exceeded", err)
	}
	s.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := h.Drain(ctx2); err != nil {
		t.Fatalf("Drain after the last stream closed: %v", err)
	}
}

// TestContent: an answer's content leaves out its read metadata and only
// that: two reads that differ in as_of or lag have the same content, two
// that differ in an entry (or in a user id that quotes a key) do not.
func TestContent(t *testing.T) {
	t.Parallel()
	lag1, lag2 := int64(1), int64(9)
	page := func(at time.Time, lag *int64, user string) []byte {
		p := gateway.Page{ReadMeta: gateway.ReadMeta{Board: "w/p/national", Source: gateway.SourceIndex, AsOf: at, LagMs: lag},
			Entries: []rank.Entry{{User: user, Points: 5, Rank: 1}}}
		js, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	standing := func(at time.Time, pts int64) []byte {
		js, err := gateway.MemberStanding{ReadMeta: gateway.ReadMeta{Board: `b,"user":x`, AsOf: at}, User: "u", Points: pts}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	t0, t1 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 1, 0, 1, 0, time.UTC)
	for _, tc := range []struct {
		name string
		a, b []byte
		key  string
		same bool
	}{
		{"page: another as_of and lag", page(t0, &lag1, "a"), page(t1, &lag2, "a"), entriesKey, true},
		{"page: another entry", page(t0, &lag1, "a"), page(t0, &lag1, "b"), entriesKey, false},
		{"page: a user id that quotes the key", page(t0, nil, `x,"entries":`), page(t0, nil, `y,"entries":`), entriesKey, false},
		{"standing: another as_of", standing(t0, 3), standing(t1, 3), userKey, true},
		{"standing: other points", standing(t0, 3), standing(t0, 4), userKey, false},
		{"no key: the whole answer", []byte(`{"as_of":"1"}`), []byte(`{"as_of":"2"}`), entriesKey, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bytes.Equal(content(tc.a, tc.key), content(tc.b, tc.key)); got != tc.same {
				t.Fatalf("same content %v, want %v:\n%s\n%s", got, tc.same, tc.a, tc.b)
			}
		})
	}
}

// fakeDirect is a subscriber's stream that takes answers from the hub's
// goroutine (Direct) while accept is set, and is busy while locked is.
type fakeDirect struct {
	mu     sync.Mutex
	busy   atomic.Bool // its own goroutine is writing: TryLock fails
	accept atomic.Bool
	got    [][]byte
}

func (d *fakeDirect) TryLock() bool {
	if d.busy.Load() {
		return false
	}
	return d.mu.TryLock()
}
func (d *fakeDirect) Unlock() { d.mu.Unlock() }
func (d *fakeDirect) Send(data []byte) bool {
	if !d.accept.Load() {
		return false
	}
	d.got = append(d.got, data)
	return true
}

func (d *fakeDirect) taken() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.got)
}

// TestDirect: a subscriber whose stream takes answers at once gets them
// there, with nothing pending; while an answer is pending, or the stream is
// busy, or it cannot write now, the answer is pending as without it, and
// only the newest.
func TestDirect(t *testing.T) {
	t.Parallel()
	f := &fakeReads{points: map[string]int64{"a": 1}}
	clock := &manualTick{c: make(chan time.Time)}
	h, _ := newTestHub(t, f, Options{Tick: clock.tick})
	s, err := h.Subscribe(context.Background(), "", Query{Board: testBoard, Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDirect{}
	s.SetDirect(d)
	// Each step sets the stream's state, then changes the board, then runs
	// a round (a round still under way from the step before sees either
	// the old board — no news — or the new one, with the new state).
	for i, c := range []struct {
		name    string
		busy    bool
		accept  bool
		direct  int  // answers Send took so far
		pending bool // an answer pending after the round
	}{
		{name: "the snapshot is pending: the update replaces it", accept: true, direct: 0, pending: true},
		{name: "nothing pending: sent at once", accept: true, direct: 1},
		{name: "the stream is busy: pending", busy: true, accept: true, direct: 1, pending: true},
		{name: "the socket takes nothing now: pending", accept: false, direct: 1, pending: true},
		{name: "nothing pending again: sent at once", accept: true, direct: 2},
	} {
		d.busy.Store(c.busy)
		d.accept.Store(c.accept)
		user := fmt.Sprintf("u%d", i)
		f.set(user, int64(10+i))
		clock.rounds(t, 1)
		if got := d.taken(); got != c.direct {
			t.Fatalf("%s: Send took %d answers, want %d: %s", c.name, got, c.direct, d.got)
		}
		if got := d.taken(); got > 0 && !strings.Contains(string(d.got[got-1]), `"user":"`+user+`"`) && !c.pending {
			t.Fatalf("%s: Send took %s, not the newest answer", c.name, d.got[got-1])
		}
		data, ok := s.Next()
		if ok != c.pending {
			t.Fatalf("%s: pending %v, want %v", c.name, ok, c.pending)
		}
		if ok && !strings.Contains(string(data), `"user":"`+user+`"`) {
			t.Fatalf("%s: the pending answer is not the newest: %s", c.name, data)
		}
	}
}

// TestDeliverReachesEverySubscriberOnce: split among goroutines or not,
// every subscriber of an answer is offered it exactly once.
func TestDeliverReachesEverySubscriberOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // several parts, whatever the machine
	for _, n := range []int{1, deliverChunk - 1, 3*deliverChunk + 7, 10 * deliverChunk} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			out := []delivery{{data: []byte("a")}, {data: []byte("b")}}
			counts := make([]*fakeDirect, 0, 2*n)
			for k := range out {
				for range n + k {
					s := &Subscription{notify: make(chan struct{}, 1)}
					d := &fakeDirect{}
					d.accept.Store(true)
					s.SetDirect(d)
					out[k].subs = append(out[k].subs, s)
					counts = append(counts, d)
				}
			}
			deliver(out, time.Now())
			i := 0
			for k := range out {
				for range n + k {
					if got := counts[i].got; len(got) != 1 || string(got[0]) != string(out[k].data) {
						t.Fatalf("subscriber %d of answer %s got %q, want it once", i, out[k].data, got)
					}
					i++
				}
			}
		})
	}
}

//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// event is one point event of the load: a unique id, retried with the same
// id until acknowledged or its deadline passes (then it stays in doubt: it
// may or may not have applied).
type event struct {
	id       string
	user     int
	delta    int64
	acked    bool
	attempts int
	// invoked: when the first attempt started; ackedAt: when the attempt that
	// was acknowledged ended (the history checker's bounds).
	invoked, ackedAt time.Time
}

// op is one attempt (a write attempt of an event, or a read).
type op struct {
	write      bool
	user       int    // writes: the event's user
	dim        string // reads: the board read
	start, end time.Time
	err        error
	seen       []obs // reads: the totals the answer showed (consistency=primary)
}

// loadConfig shapes a load.
type loadConfig struct {
	writers, readers int
	attemptTimeout   time.Duration // deadline of one ApplyEvent attempt
	eventDeadline    time.Duration // retry an event until acked or this long after its first attempt
	writePause       time.Duration // between two events of one writer
	readPause        time.Duration // between two reads of one reader
	// probeEvery: besides the closed-loop writers and readers, a prober
	// starts one new event (retried like the others) and one new read every
	// probeEvery, each in its own goroutine (at most maxProbes in flight):
	// requests that start while others hang on a dead node, so that the
	// outage ends when a new request succeeds, at this resolution.
	probeEvery time.Duration
	// read does one read; nil: Top 10 of national or a member's standing on
	// national, at consistency=primary. It returns the board it read.
	read func(ctx context.Context, rng *rand.Rand) (dim string, err error)
	// apply sends one attempt of an event (attempt counts from 0); nil:
	// the in-process Service.
	apply func(ctx context.Context, e *event, attempt int) error
}

func (c *loadConfig) defaults() {
	if c.writers == 0 {
		c.writers = 4
	}
	if c.readers == 0 {
		c.readers = 2
	}
	if c.attemptTimeout == 0 {
		c.attemptTimeout = time.Second
	}
	if c.eventDeadline == 0 {
		c.eventDeadline = 30 * time.Second
	}
	if c.writePause == 0 {
		c.writePause = 5 * time.Millisecond
	}
	if c.readPause == 0 {
		c.readPause = 10 * time.Millisecond
	}
	if c.probeEvery == 0 {
		c.probeEvery = 50 * time.Millisecond
	}
}

// load runs writers and readers through the Service and records every
// attempt with its timestamps.
type load struct {
	s   *stack
	cfg loadConfig
	tag string

	mu     sync.Mutex
	ops    []op
	events []*event
	fatal  []string

	stop  chan struct{}
	wg    sync.WaitGroup
	round int // start calls so far: event ids of later rounds differ
	// histFrom: the history checker checks reads that started at or after
	// it (the previous audit's time: each audit answers for its own round,
	// while the bounds come from every event of the load).
	histFrom time.Time
}

// maxProbes bounds the prober's requests in flight.
const maxProbes = 64

func newLoad(s *stack, tag string, cfg loadConfig) *load {
	cfg.defaults()
	return &load{s: s, cfg: cfg, tag: tag, stop: make(chan struct{})}
}

// retryable: an answer that says "try again". Anything else is a bug of the
// load or of the gateway and stops the event.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	switch rank.CodeOf(err) {
	case rank.CodeUnavailable, rank.CodeInternal:
		return true
	}
	return false
}

// send applies one event, retrying with the same id until acknowledged, the
// event deadline passes, or hard (the load's end) passes.
func (l *load) send(e *event, hard time.Time) {
	first := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.attemptTimeout)
		start := time.Now()
		if e.attempts == 0 {
			l.mu.Lock()
			e.invoked = start
			l.mu.Unlock()
		}
		var err error
		if l.cfg.apply != nil {
			err = l.cfg.apply(ctx, e, e.attempts)
		} else {
			_, err = l.s.svc.ApplyEvent(ctx, gateway.Event{EventID: e.id, Family: family, User: userName(e.user), Delta: &e.delta,
				Dims: map[string]string{"province": provinceOf(e.user)}})
		}
		cancel()
		end := time.Now()
		l.mu.Lock()
		e.attempts++
		l.ops = append(l.ops, op{write: true, user: e.user, start: start, end: end, err: err})
		if err == nil {
			e.acked, e.ackedAt = true, end
		}
		if err != nil && !retryable(err) {
			l.fatal = append(l.fatal, fmt.Sprintf("event %s: %v", e.id, err))
		}
		l.mu.Unlock()
		if err == nil || !retryable(err) {
			return
		}
		if time.Since(first) > l.cfg.eventDeadline || time.Now().After(hard) {
			return // in doubt
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seed gives every user one acknowledged event, so that every board is
// non-empty and every member ranked before a fault.
func (l *load) seed(t *testing.T) {
	t.Helper()
	hard := time.Now().Add(30 * time.Second)
	for i := 0; i < users; i++ {
		e := &event{id: fmt.Sprintf("%s-seed-%03d", l.tag, i), user: i, delta: int64(1 + i%7)}
		l.mu.Lock()
		l.events = append(l.events, e)
		l.mu.Unlock()
		l.send(e, hard)
		if !e.acked {
			t.Fatalf("seeding: event %s not acknowledged", e.id)
		}
	}
}

func (l *load) defaultRead(ctx context.Context, rng *rand.Rand) (string, error) {
	ref := l.s.ref("national")
	o := gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary}
	if rng.IntN(2) == 0 {
		p, err := l.s.svc.Top(ctx, ref, 10, o)
		if err == nil {
			for _, en := range p.Entries {
				observe(ctx, en.User, en.Points)
			}
		}
		return "national", err
	}
	m, err := l.s.svc.Member(ctx, ref, userName(rng.IntN(users)), o)
	if err == nil {
		observe(ctx, m.User, m.Points)
	}
	return "national", err
}

// start launches the writers and readers; hard bounds the whole load.
func (l *load) start(maxRun time.Duration) {
	hard := time.Now().Add(maxRun)
	l.round++
	round := l.round
	read := l.cfg.read
	if read == nil {
		read = l.defaultRead
	}
	for w := 0; w < l.cfg.writers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(time.Now().UnixNano())))
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				if time.Now().After(hard) {
					return
				}
				e := &event{id: fmt.Sprintf("%s-r%d-w%d-%06d", l.tag, round, w, n), user: rng.IntN(users), delta: int64(1 + rng.IntN(9))}
				l.mu.Lock()
				l.events = append(l.events, e)
				l.mu.Unlock()
				l.send(e, hard) // finishes the event even after stop
				time.Sleep(l.cfg.writePause)
			}
		}(w)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
		inflight := make(chan struct{}, maxProbes)
		tick := time.NewTicker(l.cfg.probeEvery)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			if time.Now().After(hard) {
				return
			}
			select {
			case inflight <- struct{}{}:
			default:
				continue // too many probes hang already
			}
			e := &event{id: fmt.Sprintf("%s-r%d-p-%06d", l.tag, round, n), user: rng.IntN(users), delta: int64(1 + rng.IntN(9))}
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
			seed := rng.Uint64()
			l.wg.Add(2)
			go func() {
				defer l.wg.Done()
				defer func() { <-inflight }()
				l.send(e, hard)
			}()
			go func() {
				defer l.wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), l.cfg.attemptTimeout)
				defer cancel()
				ctx, seen := observing(ctx)
				start := time.Now()
				dim, err := read(ctx, rand.New(rand.NewPCG(seed, 1)))
				l.mu.Lock()
				l.ops = append(l.ops, op{dim: dim, start: start, end: time.Now(), err: err, seen: *seen})
				l.mu.Unlock()
			}()
		}
	}()
	for r := 0; r < l.cfg.readers; r++ {
		l.wg.Add(1)
		go func(r int) {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r)+100, uint64(time.Now().UnixNano())))
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				if time.Now().After(hard) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), l.cfg.attemptTimeout)
				ctx, seen := observing(ctx)
				start := time.Now()
				dim, err := read(ctx, rng)
				cancel()
				l.mu.Lock()
				l.ops = append(l.ops, op{dim: dim, start: start, end: time.Now(), err: err, seen: *seen})
				l.mu.Unlock()
				time.Sleep(l.cfg.readPause)
			}
		}(r)
	}
}

// finish stops the load and waits for every writer to finish its event.
func (l *load) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(l.cfg.eventDeadline + 2*l.cfg.attemptTimeout + 10*time.Second):
		t.Fatalf("load did not stop in time")
	}
	if len(l.fatal) > 0 {
		t.Errorf("%d events got a non-retryable answer, first: %s", len(l.fatal), l.fatal[0])
	}
}

// resume starts the load again after finish (the audit ran in between).
func (l *load) resume(maxRun time.Duration) {
	l.stop = make(chan struct{})
	l.start(maxRun)
}

// counts answers: events acknowledged and in doubt, attempts, failed attempts.
type counts struct {
	events, acked, inDoubt int
	writes, writeErrs      int
	reads, readErrs        int
	firstWriteErr          string
	firstReadErr           string
}

func (l *load) counts() counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c counts
	for _, e := range l.events {
		c.events++
		if e.acked {
			c.acked++
		} else {
			c.inDoubt++
		}
	}
	for _, o := range l.ops {
		if o.write {
			c.writes++
			if o.err != nil {
				c.writeErrs++
				if c.firstWriteErr == "" {
					c.firstWriteErr = o.err.Error()
				}
			}
		} else {
			c.reads++
			if o.err != nil {
				c.readErrs++
				if c.firstReadErr == "" {
					c.firstReadErr = o.err.Error()
				}
			}
		}
	}
	return c
}

// outage is what the load saw of one fault, for one kind of operation.
type outage struct {
	// d is the time from the fault until the first operation that started at
	// or after the fault and touches the faulty node's slots succeeded; -1
	// when none did.
	d time.Duration
	// fails counts failed affected operations that ended after the fault;
	// lastFail is when the last of them ended, from the fault.
	fails    int
	lastFail time.Duration
	// otherFails counts failed operations that touch only healthy nodes.
	otherFails int
	// na: the scenario measures no outage.
	na bool
}

func (o outage) String() string {
	if o.na {
		return "n/a"
	}
	if o.d < 0 {
		return fmt.Sprintf("NOT RECOVERED (%d failures)", o.fails)
	}
	s := o.d.Round(10 * time.Millisecond).String()
	if o.fails > 0 {
		s += fmt.Sprintf(" (%d failed attempts, last at +%s)", o.fails, o.lastFail.Round(10*time.Millisecond))
	} else {
		s += " (no failed attempts)"
	}
	if o.otherFails > 0 {
		s += fmt.Sprintf(" [+%d failures on healthy slots]", o.otherFails)
	}
	return s
}

// outageOf measures the outage of writes (write) or reads after a fault at
// t0; affected says whether an operation touches the faulty node.
func (l *load) outageOf(write bool, t0 time.Time, affected func(op) bool) outage {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := outage{d: -1}
	var first time.Time
	for _, x := range l.ops {
		if x.write != write || x.end.Before(t0) {
			continue
		}
		aff := affected(x)
		if x.err != nil {
			if aff {
				o.fails++
				o.lastFail = max(o.lastFail, x.end.Sub(t0))
			} else {
				o.otherFails++
			}
			continue
		}
		if aff && !x.start.Before(t0) && (first.IsZero() || x.end.Before(first)) {
			first = x.end
		}
	}
	if !first.IsZero() {
		o.d = first.Sub(t0)
	}
	return o
}

// errorKinds summarizes failed attempts by their first words, for the log.
func (l *load) errorKinds(write bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string]int{}
	for _, x := range l.ops {
		if x.write == write && x.err != nil {
			msg := x.err.Error()
			if i := strings.LastIndex(msg, ": "); i >= 0 && len(msg)-i < 80 {
				msg = msg[i+2:]
			}
			if len(msg) > 80 {
				msg = msg[:80]
			}
			m[msg]++
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var sb strings.Builder
	for i, k := range keys {
		if i == 4 {
			fmt.Fprintf(&sb, "; …")
			break
		}
		if i > 0 {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%d× %q", m[k], k)
	}
	return sb.String()
}

// affectedBy returns the predicate "the operation touches a slot served by
// the master on port", from the slot map before the fault.
func (l *load) affectedBy(tp topology, port int) func(op) bool {
	hit := make([]bool, users)
	for i := range hit {
		for _, sl := range l.s.slotsOfUser(i) {
			hit[i] = hit[i] || tp.ownerOf(sl) == port
		}
	}
	dims := map[string]bool{}
	for _, d := range boardDims() {
		for _, sl := range l.s.boardSlots(d) {
			dims[d] = dims[d] || tp.ownerOf(sl) == port
		}
	}
	return func(x op) bool {
		if x.write {
			return hit[x.user]
		}
		return dims[x.dim]
	}
}

// waitFor keeps the load running until cond holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

// recovered reports whether an affected write and read both succeeded after t0.
func (l *load) recovered(t0 time.Time, affected func(op) bool) bool {
	return l.outageOf(true, t0, affected).d >= 0 && l.outageOf(false, t0, affected).d >= 0
}

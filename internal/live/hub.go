// Package live is the hub of live boards (docs/architecture.md, "Live boards: the hub"): it holds the
// subscriptions of GET {board}/live, computes each board's answers once per
// board and query shape per the family's live.interval — one Top per (board,
// top N), one standing and around-me per (board, followed member, radius) —
// shares them with every subscriber of that shape, sends a subscriber only
// answers that changed, bounds the subscribers per gateway and per token, and
// drops a subscriber that cannot keep up.
//
// It reads through the gateway's read functions (Reads), so the read index,
// the cache and the consistency defaults apply as to any read. The HTTP side
// (text/event-stream, ids, heartbeats, write deadlines) is internal/httpapi's.
//
// It imports internal/gateway (its read types) and internal/rank; it must not
// import net/http, go-redis, internal/store, internal/ledger or
// internal/httpapi.
package live

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// Reads is what the hub needs of the gateway: the reads behind a live answer.
type Reads interface {
	Top(ctx context.Context, b gateway.BoardRef, limit int, o gateway.ReadOptions) (gateway.Page, error)
	Member(ctx context.Context, b gateway.BoardRef, user string, o gateway.ReadOptions) (gateway.MemberStanding, error)
	Around(ctx context.Context, b gateway.BoardRef, user string, radius int, o gateway.ReadOptions) (gateway.Page, error)
}

var _ Reads = (*gateway.Service)(nil)

// Options are the hub's dependencies and bounds.
type Options struct {
	// Reads computes the answers (required).
	Reads Reads
	// Logger receives computation failures; nil discards.
	Logger *slog.Logger
	// Registerer takes the hub's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Interval returns a family's live.interval; nil or a result ≤ 0: 1s.
	Interval func(family string) time.Duration
	// MaxSubscribers bounds the open subscriptions (live.max_subscribers);
	// MaxPerToken those of one key (live.max_per_token). 0: unbounded.
	MaxSubscribers int
	MaxPerToken    int
	// MaxBehind (live.max_behind): a subscriber whose newest answer has
	// waited this long untaken is closed as overloaded. 0: 30s.
	MaxBehind time.Duration
	// ReadTimeout bounds one interval's computation of a board. 0: 5s.
	ReadTimeout time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Tick makes a board's round clock: a channel that ticks every d and
	// its stop function. Nil: a time.Ticker.
	Tick func(d time.Duration) (<-chan time.Time, func())
}

// Query is one query shape of a board: its Top N and, when Member is set,
// that member's standing and the Radius entries around them.
type Query struct {
	Board  gateway.BoardRef
	Top    int
	Member string
	Radius int
}

// Reason says why a subscription ended from the hub's side.
type Reason string

const (
	// ReasonOverloaded: the subscriber did not take its answers in time.
	ReasonOverloaded Reason = "overloaded"
	// ReasonShutdown: the hub is closing (the gateway shuts down).
	ReasonShutdown Reason = "shutdown"
)

// Hub holds the subscriptions and their shared computations.
type Hub struct {
	reads     Reads
	log       *slog.Logger
	m         *metrics
	interval  func(string) time.Duration
	maxSubs   int
	maxPerKey int
	maxBehind time.Duration
	timeout   time.Duration
	now       func() time.Time
	tick      func(time.Duration) (<-chan time.Time, func())

	mu     sync.Mutex
	closed bool
	total  int
	perKey map[string]int
	boards map[gateway.BoardRef]*board
	loops  sync.WaitGroup
	// drained is closed once the hub is closed and every subscription has
	// been closed by its stream (its last event written or failed).
	drained chan struct{}
}

// board is one board's computation loop and its query shapes.
type board struct {
	ref      gateway.BoardRef
	interval time.Duration
	kick     chan struct{} // cap 1: compute the shapes without an answer now
	stop     chan struct{}
	groups   map[Query]*group // guarded by Hub.mu
}

// group is the subscribers of one query shape and the last answer they got.
type group struct {
	q     Query
	subs  map[*Subscription]struct{}
	ready chan struct{} // closed at the first answer (data or err)
	err   error         // the first computation's error, if it failed
	data  []byte        // the last answer sent (event data)
	sum   [32]byte      // its content hash, as_of left out
	has   bool
}

// New builds a hub.
func New(o Options) (*Hub, error) {
	if o.Reads == nil {
		return nil, rank.Errorf(rank.CodeInternal, "live: nil Reads")
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	h := &Hub{reads: o.Reads, log: o.Logger, m: m, interval: o.Interval, maxSubs: o.MaxSubscribers,
		maxPerKey: o.MaxPerToken, maxBehind: o.MaxBehind, timeout: o.ReadTimeout, now: o.Now,
		perKey: map[string]int{}, boards: map[gateway.BoardRef]*board{}, drained: make(chan struct{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBehind <= 0 {
		h.maxBehind = 30 * time.Second
	}
	if h.timeout <= 0 {
		h.timeout = 5 * time.Second
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.tick = o.Tick; h.tick == nil {
		h.tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return h, nil
}

func (h *Hub) intervalOf(family string) time.Duration {
	if h.interval != nil {
		if d := h.interval(family); d > 0 {
			return d
		}
	}
	return time.Second
}

// Subscribe opens a subscription of key (the token or subject it counts
// against; "" — an open API — counts against MaxSubscribers only) to q. It waits for the shape's first answer (shared with the
// shape's other subscribers) and returns the read's error when that failed
// (unknown family, bad top or radius, Redis unavailable). Over the bounds, or
// while the hub closes: rank unavailable. The first answer is pending on the
// subscription when it returns. Close it when done.
func (h *Hub) Subscribe(ctx context.Context, key string, q Query) (*Subscription, error) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		h.m.refused.WithLabelValues("shutdown").Inc()
		return nil, rank.Unavailable(nil, "the gateway is shutting down; reconnect to another")
	case h.maxSubs > 0 && h.total >= h.maxSubs:
		h.mu.Unlock()
		h.m.refused.WithLabelValues("max_subscribers").Inc()
		return nil, rank.Unavailable(nil, "the gateway serves its limit of %d live subscribers; retry shortly", h.maxSubs)
	case h.maxPerKey > 0 && key != "" && h.perKey[key] >= h.maxPerKey:
		h.mu.Unlock()
		h.m.refused.WithLabelValues("max_per_token").Inc()
		return nil, rank.Unavailable(nil, "this token has its limit of %d live subscriptions open; close one or retry later", h.maxPerKey)
	}
	b := h.boards[q.Board]
	if b == nil {
		b = &board{ref: q.Board, interval: h.intervalOf(q.Board.Family), kick: make(chan struct{}, 1),
			stop: make(chan struct{}), groups: map[Query]*group{}}
		h.boards[q.Board] = b
		h.loops.Add(1)
		go h.run(b)
	}
	g := b.groups[q]
	if g == nil {
		g = &group{q: q, subs: map[*Subscription]struct{}{}, ready: make(chan struct{})}
		b.groups[q] = g
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	s := &Subscription{h: h, b: b, g: g, key: key, notify: make(chan struct{}, 1), done: make(chan struct{})}
	g.subs[s] = struct{}{}
	if g.has {
		s.offer(g.data, h.now())
	}
	h.total++
	h.perKey[key]++
	h.mu.Unlock()

	select {
	case <-g.ready:
	case <-s.done: // the hub closed before the first answer
		s.Close()
		return nil, rank.Unavailable(nil, "the gateway is shutting down; reconnect to another")
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	if g.err != nil {
		s.Close()
		return nil, g.err
	}
	// Counted by family only once the board answered: a family named in a
	// request that does not exist never becomes a label.
	h.mu.Lock()
	if _, open := g.subs[s]; open {
		s.counted = true
		h.m.subscribers.WithLabelValues(q.Board.Family).Inc()
	}
	h.mu.Unlock()
	return s, nil
}

// Close ends every subscription with ReasonShutdown, refuses new ones and
// stops the computations. It returns once every loop has stopped.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for ref, b := range h.boards {
		for _, g := range b.groups {
			for s := range g.subs {
				s.finish(ReasonShutdown)
			}
		}
		delete(h.boards, ref) // remove no longer stops it: done here
		close(b.stop)
	}
	if h.total == 0 {
		close(h.drained)
	}
	h.mu.Unlock()
	h.loops.Wait()
}

// Drain waits, after Close, until every stream has closed its subscription
// (its "reconnect" event written, or the write failed), or until ctx ends.
// A stream runs apart from the HTTP server once it has taken its connection
// over, so the server's Shutdown does not wait for it: the gateway drains
// the hub after Shutdown, before it exits.
func (h *Hub) Drain(ctx context.Context) error {
	select {
	case <-h.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Subscribers returns how many subscriptions are open.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// remove takes s out of its group (and the group, the board, when empty).
func (h *Hub) remove(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, b := s.g, s.b
	if _, ok := g.subs[s]; !ok {
		return
	}
	delete(g.subs, s)
	h.total--
	if h.closed && h.total == 0 {
		close(h.drained)
	}
	if h.perKey[s.key]--; h.perKey[s.key] <= 0 {
		delete(h.perKey, s.key)
	}
	if s.counted {
		h.m.subscribers.WithLabelValues(b.ref.Family).Dec()
	}
	if len(g.subs) == 0 && b.groups[g.q] == g {
		delete(b.groups, g.q)
	}
	if len(b.groups) == 0 && h.boards[b.ref] == b {
		delete(h.boards, b.ref)
		close(b.stop)
	}
}

// run is a board's loop: every interval it computes every shape, and at a
// kick the shapes still without an answer.
func (h *Hub) run(b *board) {
	defer h.loops.Done()
	ticks, stop := h.tick(b.interval)
	defer stop()
	for {
		select {
		case <-b.stop:
			return
		case <-ticks:
			h.compute(b, false)
		case <-b.kick:
			h.compute(b, true)
		}
	}
}

// readParallelism bounds the reads one board's round runs at once (its
// distinct shapes: Top sizes and followed members).
const readParallelism = 8

type memberShape struct {
	member string
	radius int
}

type memberAnswer struct {
	standing json.RawMessage // "null" when not ranked
	around   json.RawMessage // "null" when not ranked
	hash     []byte
	err      error
}

type topAnswer struct {
	page gateway.Page
	json []byte
	hash []byte
	err  error
}

// compute computes the shapes of b (only those without an answer when
// fresh), once each, and hands every group its answer.
func (h *Hub) compute(b *board, fresh bool) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		if g.err == nil && (!fresh || !g.has) {
			groups = append(groups, g)
		}
	}
	h.mu.Unlock()
	if len(groups) == 0 {
		return
	}
	start := h.now()
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	// Each distinct shape once, at most readParallelism reads at a time.
	tops := map[int]*topAnswer{}
	members := map[memberShape]*memberAnswer{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallelism)
	run := func(f func()) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f()
		}()
	}
	for _, g := range groups {
		if _, ok := tops[g.q.Top]; !ok {
			a := new(topAnswer)
			tops[g.q.Top] = a
			n := g.q.Top
			run(func() { *a = *h.top(ctx, b.ref, n) })
		}
		if g.q.Member != "" {
			ms := memberShape{g.q.Member, g.q.Radius}
			if _, ok := members[ms]; !ok {
				a := new(memberAnswer)
				members[ms] = a
				run(func() { *a = *h.member(ctx, b.ref, ms) })
			}
		}
	}
	wg.Wait()
	took := h.now().Sub(start)
	observed := false

	now := h.now()
	// The answers go to their subscribers once h.mu is released: a
	// subscriber's stream may write them there and then (Direct).
	var out []delivery
	defer func() { deliver(out, now) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range groups {
		if !fresh {
			h.checkBehind(g, now)
		}
		t := tops[g.q.Top]
		var m *memberAnswer
		if g.q.Member != "" {
			m = members[memberShape{g.q.Member, g.q.Radius}]
		}
		err := t.err
		if err == nil && m != nil {
			err = m.err
		}
		if err != nil {
			h.m.errors.Inc()
			if !g.has && g.err == nil {
				g.err = err
				close(g.ready)
			} else {
				h.log.Warn("live: computing a board's answer failed; subscribers keep the last one",
					"board", b.ref.Family+"/"+b.ref.Period+"/"+b.ref.Dimension, "err", err)
			}
			continue
		}
		if !observed { // by family only for a board that answers
			h.m.seconds.WithLabelValues(b.ref.Family).Observe(took.Seconds())
			observed = true
		}
		sum := sha256.New()
		sum.Write(t.hash)
		if m != nil {
			sum.Write(m.hash)
		}
		var digest [32]byte
		copy(digest[:], sum.Sum(nil))
		if g.has && digest == g.sum {
			continue
		}
		data := eventData(t, m)
		g.data, g.sum = data, digest
		if !g.has {
			g.has = true
			close(g.ready)
		}
		subs := make([]*Subscription, 0, len(g.subs))
		for s := range g.subs {
			subs = append(subs, s)
		}
		out = append(out, delivery{data, subs})
	}
}

// delivery is one shape's new answer and its subscribers.
type delivery struct {
	data []byte
	subs []*Subscription
}

// deliverChunk is the fewest subscribers worth a goroutine of their own.
const deliverChunk = 256

// deliver offers each answer to its subscribers: their streams may write it
// there and then (Direct), one write each, so many subscribers are split
// among GOMAXPROCS goroutines.
func deliver(out []delivery, now time.Time) {
	n := 0
	for _, d := range out {
		n += len(d.subs)
	}
	parts := min(runtime.GOMAXPROCS(0), n/deliverChunk)
	if parts <= 1 {
		for _, d := range out {
			for _, s := range d.subs {
				s.offer(d.data, now)
			}
		}
		return
	}
	// Part p takes every parts-th subscriber of every answer.
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for _, d := range out {
				for i := p; i < len(d.subs); i += parts {
					d.subs[i].offer(d.data, now)
				}
			}
		})
	}
	wg.Wait()
}

// checkBehind closes as overloaded the subscribers of g whose pending answer
// has waited longer than MaxBehind. h.mu is held.
func (h *Hub) checkBehind(g *group, now time.Time) {
	for s := range g.subs {
		s.mu.Lock()
		late := (s.pending != nil && now.Sub(s.since) > h.maxBehind) ||
			(!s.stalled.IsZero() && now.Sub(s.stalled) > h.maxBehind)
		s.mu.Unlock()
		if late {
			s.finish(ReasonOverloaded)
		}
	}
}

func (h *Hub) top(ctx context.Context, b gateway.BoardRef, n int) *topAnswer {
	h.m.computations.WithLabelValues("top").Inc()
	p, err := h.reads.Top(ctx, b, n, gateway.ReadOptions{})
	if err != nil {
		return &topAnswer{err: err}
	}
	if p.Entries == nil {
		p.Entries = []rank.Entry{}
	}
	js, err := p.MarshalJSON()
	if err != nil {
		return &topAnswer{err: err}
	}
	return &topAnswer{page: p, json: js, hash: content(js, entriesKey)}
}

// The first keys after an answer's read metadata.
const (
	entriesKey = `,"entries":` // a page's
	userKey    = `,"user":`    // a standing's
)

// content is the part of an answer's JSON that is news when it changes: all
// but its read metadata (board, source, as_of, lag_ms: as_of changes at every
// read), which comes first, up to key. A key's quote cannot stand unescaped
// inside a JSON string, so the first match is the field. (Without a match:
// the whole answer, at worst an update that changed only its as_of.)
func content(js []byte, key string) []byte {
	if i := bytes.Index(js, []byte(key)); i >= 0 {
		return js[i:]
	}
	return js
}

func (h *Hub) member(ctx context.Context, b gateway.BoardRef, ms memberShape) *memberAnswer {
	h.m.computations.WithLabelValues("member").Inc()
	null := json.RawMessage("null")
	st, err := h.reads.Member(ctx, b, ms.member, gateway.ReadOptions{})
	if rank.CodeOf(err) == rank.CodeNotRanked {
		return &memberAnswer{standing: null, around: null, hash: []byte("null")}
	}
	if err != nil {
		return &memberAnswer{err: err}
	}
	ar, err := h.reads.Around(ctx, b, ms.member, ms.radius, gateway.ReadOptions{})
	if rank.CodeOf(err) == rank.CodeNotRanked { // left between the two reads
		return &memberAnswer{standing: null, around: null, hash: []byte("null")}
	}
	if err != nil {
		return &memberAnswer{err: err}
	}
	if ar.Entries == nil {
		ar.Entries = []rank.Entry{}
	}
	// Encoded once each, by the answers' own encoders (json.Marshal would
	// call them and then validate and compact their output again).
	sj, err := st.MarshalJSON()
	if err != nil {
		return &memberAnswer{err: err}
	}
	aj, err := ar.MarshalJSON()
	if err != nil {
		return &memberAnswer{err: err}
	}
	return &memberAnswer{standing: sj, around: aj, hash: bytes.Join([][]byte{content(sj, userKey), content(aj, entriesKey)}, []byte{0})}
}

// Event is the data of a snapshot or update event.
type Event struct {
	Board  string          `json:"board"`
	AsOf   time.Time       `json:"as_of"`
	Source gateway.Source  `json:"source"`
	Top    json.RawMessage `json:"top"`
	Member json.RawMessage `json:"member,omitempty"`
	Around json.RawMessage `json:"around,omitempty"`
}

// eventData encodes the Event of t and m: the same bytes as json.Marshal of
// an Event, built by splicing the answers already encoded (json.Marshal would
// validate and compact every raw part again, once per query shape).
func eventData(t *topAnswer, m *memberAnswer) []byte {
	head, err := json.Marshal(struct {
		Board  string         `json:"board"`
		AsOf   time.Time      `json:"as_of"`
		Source gateway.Source `json:"source"`
	}{t.page.Board, t.page.AsOf, t.page.Source})
	if err != nil { // a string, a time and a string: cannot fail
		panic(err)
	}
	n := len(head) + len(t.json) + 32
	if m != nil {
		n += len(m.standing) + len(m.around)
	}
	b := make([]byte, 0, n)
	b = append(b, head[:len(head)-1]...) // without its closing brace
	b = append(b, `,"top":`...)
	b = append(b, t.json...)
	if m != nil && len(m.standing) > 0 {
		b = append(b, `,"member":`...)
		b = append(b, m.standing...)
	}
	if m != nil && len(m.around) > 0 {
		b = append(b, `,"around":`...)
		b = append(b, m.around...)
	}
	return append(b, '}')
}

// Subscription is one subscriber's view of a query shape: at most one
// pending answer (the newest), a notification when one arrives, and Done
// when the hub ends it.
type Subscription struct {
	h      *Hub
	b      *board
	g      *group
	key    string
	notify chan struct{} // cap 1
	done   chan struct{}

	mu      sync.Mutex
	pending []byte
	since   time.Time // when pending was first filled since last taken
	stalled time.Time // since when the client has taken no bytes (zero: it takes them)
	reason  Reason
	ended   bool
	closed  bool
	counted bool // in the subscribers gauge (guarded by Hub.mu)

	direct atomic.Pointer[directRef] // SetDirect
}

// Direct is a subscriber's stream when it can take an answer from the hub's
// own goroutine: Send writes it as the stream's next event at once, without
// blocking (what the socket takes now; the stream's own goroutine writes
// the rest), and reports whether it did — false: nothing was written and
// the answer waits, pending, for the stream's goroutine as without Direct.
// The hub calls Send only between a successful TryLock and Unlock, and only
// when no answer is pending; the stream holds the same lock while its own
// goroutine takes a pending answer and writes it, so the events keep their
// order. One write from the goroutine that computed the answer, instead of
// a wake-up of one goroutine per subscriber.
type Direct interface {
	TryLock() bool
	Unlock()
	Send(data []byte) bool
}

type directRef struct{ d Direct }

// SetDirect lets the hub hand s's answers to d (nil: back to Next).
func (s *Subscription) SetDirect(d Direct) {
	if d == nil {
		s.direct.Store(nil)
		return
	}
	s.direct.Store(&directRef{d})
}

// offer makes data the pending answer (replacing an older one not taken),
// unless the subscriber's stream took it at once (Direct).
func (s *Subscription) offer(data []byte, now time.Time) {
	if r := s.direct.Load(); r != nil && r.d.TryLock() {
		s.mu.Lock()
		idle := s.pending == nil && !s.closed
		s.mu.Unlock()
		sent := idle && r.d.Send(data)
		r.d.Unlock()
		if sent {
			return
		}
	}
	s.mu.Lock()
	if s.pending == nil {
		s.since = now
	}
	s.pending = data
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// finish ends s from the hub's side. h.mu is held.
func (s *Subscription) finish(r Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.reason = true, r
	if r == ReasonOverloaded {
		s.h.m.drops.WithLabelValues(string(r)).Inc()
	}
	close(s.done)
}

// Stalled reports whether the client has taken none of the bytes written
// to it since the stream's previous write (its connection's send queue
// holds them all). A subscriber stalled for longer than MaxBehind is closed
// as overloaded, as one whose answers wait untaken: a client that stopped
// reading is let go within MaxBehind of its receive window closing, not
// only once the kernel's buffers have filled and a write timed out.
func (s *Subscription) Stalled(stalled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !stalled:
		s.stalled = time.Time{}
	case s.stalled.IsZero():
		s.stalled = s.h.now()
	}
}

// Ready is signalled when an answer is pending (take it with Next).
func (s *Subscription) Ready() <-chan struct{} { return s.notify }

// Done is closed when the hub ends the subscription; Reason says why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Reason is why the hub ended the subscription ("" while it has not).
func (s *Subscription) Reason() Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Next takes the pending answer (the data of one event), if any.
func (s *Subscription) Next() ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.pending
	s.pending = nil
	return d, d != nil
}

// Sent counts one event of type typ written to the subscriber.
func (s *Subscription) Sent(typ string) {
	if c, ok := s.h.m.sent[typ]; ok {
		c.Inc()
		return
	}
	s.h.m.events.WithLabelValues(typ).Inc()
}

// Drop counts the subscriber as dropped for reason (say "write": a write
// failed or passed its deadline) and closes the subscription.
func (s *Subscription) Drop(reason string) {
	s.h.m.drops.WithLabelValues(reason).Inc()
	s.Close()
}

// Close ends the subscription and frees its place. Idempotent.
func (s *Subscription) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.pending = nil
	s.mu.Unlock()
	s.h.remove(s)
}

package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rankgate/rankgate/internal/live"
	"github.com/rankgate/rankgate/internal/rank"
)

// LiveHub is what the live route needs of the hub (*live.Hub).
type LiveHub interface {
	Subscribe(ctx context.Context, key string, q live.Query) (*live.Subscription, error)
}

var _ LiveHub = (*live.Hub)(nil)

// LiveOptions configure GET {board}/live.
type LiveOptions struct {
	// Hub serves the subscriptions; nil: the route answers 503 unavailable.
	Hub LiveHub
	// Heartbeat is the interval of ": ping" comments (live.heartbeat);
	// 0: 15s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a stream (live.write_timeout); it
	// replaces the server's write timeout for the stream. 0: 10s.
	WriteTimeout time.Duration
	// MaxBehind is the hub's live.max_behind. A stream reads its
	// connection's send queue, to tell a reader that stopped, at most every
	// quarter of it (and at most every 5 s), not before every write: a
	// stalled reader is let go within 1.25 × max_behind. 0: every second.
	MaxBehind time.Duration
}

// liveRoute is the pattern of the live stream; TicketRoute marks it, so a
// browser may open it with ?ticket= instead of an Authorization header.
const liveRoute = "GET " + board + "/live"

// live answers GET {board}/live: a text/event-stream of the board's answer
// (see internal/live). Event ids increase along the stream; a reconnect with
// Last-Event-ID gets a fresh snapshot whose id follows the one it names.
func (s *server) live(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	top := q.int("top", defaultTopLimit)
	member, _ := q.str("member")
	radius := q.int("radius", defaultRadius)
	if q.err != nil {
		return q.err
	}
	if s.liveOpts.Hub == nil {
		return rank.Unavailable(nil, "live boards are not served by this gateway")
	}
	var id uint64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 63); err == nil {
			id = n
		}
	}
	key := ""
	if p, ok := PrincipalFrom(r.Context()); ok {
		key = p.Token
	}
	sub, err := s.liveOpts.Hub.Subscribe(r.Context(), key, live.Query{Board: boardOf(r), Top: top, Member: member, Radius: radius})
	if err != nil {
		return err
	}
	heartbeat, timeout, check := s.liveOpts.Heartbeat, s.liveOpts.WriteTimeout, min(s.liveOpts.MaxBehind/4, maxStallCheck)
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if check <= 0 {
		check = time.Second
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies: do not buffer the stream
	st := openStream(w, r, timeout, check)
	if _, raw := st.(*rawStream); raw {
		// The connection is the stream's alone: the request is done, and
		// its goroutine, its request and response and net/http's buffers
		// of the connection go with it.
		go serveStream(st, sub, id, heartbeat)
		return nil
	}
	serveStream(st, sub, id, heartbeat)
	return nil
}

// serveStream writes sub's answers to st until the client goes, the hub
// ends the subscription or a write fails; then it closes both. id is the
// last event id the client saw (Last-Event-ID), or 0. Where st can write
// without blocking, the hub writes most answers itself (liveWriter.Send);
// this goroutine writes the first, those the hub left pending, what a write
// without blocking left over, and the heartbeats.
func serveStream(st stream, sub *live.Subscription, id uint64, heartbeat time.Duration) {
	defer sub.Close()
	defer st.close()
	if err := st.write(liveOpen); err != nil {
		sub.Drop("write")
		return
	}
	w := &liveWriter{st: st, sub: sub, id: id, typ: "snapshot", flush: make(chan struct{}, 1)}
	if st.canTry() {
		sub.SetDirect(w)
		defer sub.SetDirect(nil)
	}
	defer w.end()
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-st.gone():
			return
		case <-sub.Done():
			final := "reconnect"
			if sub.Reason() == live.ReasonOverloaded {
				final = "overloaded"
			}
			// A client that stopped reading would hold this last write
			// for the whole write timeout: it gets a second at most.
			w.mu.Lock()
			w.ended = true // the hub writes nothing after the last event
			st.shorten(finalWriteTimeout)
			_ = w.event(final, []byte("{}"))
			w.mu.Unlock()
			return
		case <-sub.Ready():
			w.mu.Lock()
			if data, ok := sub.Next(); ok {
				err = w.event(w.typ, data)
			}
			w.mu.Unlock()
		case <-w.flush:
			w.mu.Lock()
			err = w.flushRest()
			w.mu.Unlock()
		case <-ping.C:
			w.mu.Lock()
			if err = w.flushRest(); err == nil {
				checkStall(st, sub)
				err = st.write(livePing)
			}
			w.mu.Unlock()
		}
		if err != nil {
			sub.Drop("write")
			return
		}
	}
}

// liveWriter writes one stream's events, from the stream's goroutine or
// from the hub's (Send, live.Direct); mu orders them.
type liveWriter struct {
	mu    sync.Mutex
	st    stream
	sub   *live.Subscription
	id    uint64 // the last event id written
	typ   string // the next answer's event type: snapshot, then update
	head  []byte
	rest  []byte        // what a write without blocking left unsent
	flush chan struct{} // cap 1: rest is waiting for the stream's goroutine
	ended bool          // the stream's goroutine is done: Send writes nothing
}

// end stops the hub's writes (Send) for good.
func (w *liveWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

var _ live.Direct = (*liveWriter)(nil)

func (w *liveWriter) TryLock() bool { return w.mu.TryLock() }
func (w *liveWriter) Unlock()       { w.mu.Unlock() }

// header renders the id, event and data-prefix lines of the next event.
func (w *liveWriter) header(typ string) []byte {
	h := append(w.head[:0], "id: "...)
	h = strconv.AppendUint(h, w.id+1, 10)
	h = append(h, "\nevent: "...)
	h = append(h, typ...)
	h = append(h, "\ndata: "...)
	w.head = h
	return h
}

// event writes one event, blocking (under the stream's write deadline),
// after what a write without blocking left. mu is held.
func (w *liveWriter) event(typ string, data []byte) error {
	if err := w.flushRest(); err != nil {
		return err
	}
	checkStall(w.st, w.sub)
	if err := w.st.write(w.header(typ), data, eventEnd); err != nil {
		return err
	}
	w.sent(typ)
	return nil
}

func (w *liveWriter) sent(typ string) {
	w.id++
	w.typ = "update" // after the snapshot (a last event ends the stream)
	w.sub.Sent(typ)
}

// flushRest writes what a write without blocking left. mu is held.
func (w *liveWriter) flushRest() error {
	if len(w.rest) == 0 {
		return nil
	}
	err := w.st.write(w.rest)
	w.rest = nil
	return err
}

// Send writes data as the next answer without blocking (live.Direct): what
// the socket takes now; the rest is left to the stream's goroutine. False
// when nothing could be written: data then waits as a pending answer. mu
// is held (TryLock).
func (w *liveWriter) Send(data []byte) bool {
	if w.ended || len(w.rest) > 0 {
		return false
	}
	checkStall(w.st, w.sub)
	head := w.header(w.typ)
	n, err := w.st.tryWrite(head, data, eventEnd)
	if err != nil || n == 0 {
		return false
	}
	if total := len(head) + len(data) + len(eventEnd); n < total {
		w.rest = appendFrom(make([]byte, 0, total-n), n, head, data, eventEnd)
		select {
		case w.flush <- struct{}{}:
		default:
		}
	}
	w.sent(w.typ)
	return true
}

// appendFrom appends to b the bytes of parts from offset n on.
func appendFrom(b []byte, n int, parts ...[]byte) []byte {
	for _, p := range parts {
		if n >= len(p) {
			n -= len(p)
			continue
		}
		b = append(b, p[n:]...)
		n = 0
	}
	return b
}

// checkStall tells sub whether its client stalled, when st has looked.
func checkStall(st stream, sub *live.Subscription) {
	if stalled, looked := st.stalled(); looked {
		sub.Stalled(stalled)
	}
}

// errWouldBlock: a stream that cannot write without blocking.
var errWouldBlock = errors.New("live: this stream writes only from its own goroutine")

// maxStallCheck bounds the interval of a stream's stall checks.
const maxStallCheck = 5 * time.Second

// finalWriteTimeout bounds the write of a stream's last event (reconnect,
// overloaded).
const finalWriteTimeout = time.Second

var (
	liveOpen = []byte(": live\n\n")
	livePing = []byte(": ping\n\n")
	// eventEnd ends an event's data line and the event.
	eventEnd = []byte("\n\n")
)

// stream is the connection of one live subscriber. write sends parts as one
// piece under its own write deadline (the server's write_timeout would end a
// healthy stream; a reader that stops taking bytes is dropped within the
// live write_timeout). gone is closed when the client has gone.
type stream interface {
	write(parts ...[]byte) error
	gone() <-chan struct{}
	close()
	// shorten lowers the write deadline of the writes still to come.
	shorten(d time.Duration)
	// canTry reports whether tryWrite can write.
	canTry() bool
	// tryWrite writes what the connection takes now without blocking, and
	// answers how many bytes that was; an error where it cannot (then it
	// wrote nothing). Between a write and a tryWrite nothing is lost: the
	// caller keeps the bytes not taken.
	tryWrite(parts ...[]byte) (int, error)
	// stalled is asked before each write. When looked, it reports whether
	// the client has taken none of the bytes written to it since the
	// previous look while some are still queued; a stream looks at most
	// once per its stall check interval, and never where it cannot tell.
	stalled() (stalled, looked bool)
}

// openStream answers 200 and returns the stream. Over HTTP/1.x it takes the
// connection over from net/http (Hijack): the response is delimited by the
// connection's close, each event leaves in one writev of the id line and
// the data the hub encoded once for every subscriber of its shape, and the
// connection's buffers of net/http (a 4 KiB reader, a 4 KiB writer, the
// response's 2 KiB chunking buffer) are not held for the stream's life —
// what a subscriber costs is then mostly its socket. Where the connection
// cannot be taken over (HTTP/2, a writer without Hijack), the response is
// written and flushed through net/http.
func openStream(w http.ResponseWriter, r *http.Request, timeout, check time.Duration) stream {
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		// Hijack clears the connection's deadlines; its buffered reader
		// holds nothing more of use (a GET without a body).
		if conn, _, err := rc.Hijack(); err == nil {
			hdr := w.Header()
			hdr.Set("Connection", "close")
			hdr.Set("Date", time.Now().UTC().Format(http.TimeFormat))
			var b bytes.Buffer
			b.WriteString("HTTP/1.1 200 OK\r\n")
			_ = hdr.Write(&b) // a bytes.Buffer does not fail
			b.WriteString("\r\n")
			rs := &rawStream{conn: conn, timeout: timeout, check: check, left: make(chan struct{}), status: b.Bytes()}
			if sc, ok := conn.(syscall.Conn); ok {
				rs.raw, _ = sc.SyscallConn() // nil: every write blocks, no stall check
			}
			// What the client sends from now on (nothing, for an
			// EventSource) is read and dropped; its end says it has gone.
			go rs.watch()
			return rs
		}
	}
	w.WriteHeader(http.StatusOK)
	return &flushStream{w: w, rc: rc, timeout: timeout, done: r.Context().Done()}
}

// rawStream is a connection taken over from net/http.
type rawStream struct {
	conn    net.Conn
	raw     syscall.RawConn // for tryWrite and stalled; nil: not a socket
	timeout time.Duration
	left    chan struct{} // closed when a read from the client fails
	status  []byte        // the status line and headers, sent with the first write
	bufs    [4][]byte
	// queued is the send queue as stalled last read it plus what the
	// writes since sent: had the client acknowledged nothing since, the
	// queue would hold queued bytes now. One SIOCOUTQ per check interval
	// at most (next: the earliest time of the next), not one per write:
	// the ioctl takes the socket's lock and cost about half as much as the
	// write itself.
	check  time.Duration
	next   time.Time
	queued int
}

func (s *rawStream) watch() {
	defer close(s.left)
	var b [64]byte
	for {
		if _, err := s.conn.Read(b[:]); err != nil {
			return
		}
	}
}

// write blocks until parts are written or the write timeout passed. The
// deadline is cleared after (tryWrite would fail on a past one); a
// timed-out write leaves the stream to be closed.
func (s *rawStream) write(parts ...[]byte) error {
	if err := s.conn.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil {
		return err
	}
	bufs := s.bufs[:0]
	if s.status != nil {
		bufs = append(bufs, s.status)
		s.status = nil
	}
	bufs = append(bufs, parts...)
	nb := net.Buffers(bufs)
	n, err := nb.WriteTo(s.conn)
	s.queued += int(n)
	if err != nil {
		return err
	}
	return s.conn.SetWriteDeadline(time.Time{})
}

func (s *rawStream) canTry() bool { return s.raw != nil && canWritev }

// tryWrite: one writev on the non-blocking socket, once the status line
// went out with a blocking write.
func (s *rawStream) tryWrite(parts ...[]byte) (int, error) {
	if !s.canTry() || s.status != nil {
		return 0, errWouldBlock
	}
	n, err := writevNow(s.raw, parts)
	s.queued += n
	return n, err
}

// stalled: the send queue holds bytes and not one byte of it was
// acknowledged since the last look. A reader that takes its bytes, even
// over a slow link, acknowledges some within a check interval; one that
// stopped reading (its receive window closed) acknowledges none.
func (s *rawStream) stalled() (bool, bool) {
	now := time.Now()
	if now.Before(s.next) {
		return false, false
	}
	s.next = now.Add(s.check)
	q, ok := unsentBytes(s.raw)
	if !ok {
		return false, false
	}
	stalled := q > 0 && q >= s.queued
	s.queued = q
	return stalled, true
}

func (s *rawStream) gone() <-chan struct{}   { return s.left }
func (s *rawStream) shorten(d time.Duration) { s.timeout = min(s.timeout, d) }
func (s *rawStream) close()                  { _ = s.conn.Close() }

// flushStream writes through net/http's response and flushes each write.
type flushStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	done    <-chan struct{}
}

func (s *flushStream) write(parts ...[]byte) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	for _, p := range parts {
		if _, err := s.w.Write(p); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

func (s *flushStream) canTry() bool                    { return false }
func (s *flushStream) tryWrite(...[]byte) (int, error) { return 0, errWouldBlock }
func (s *flushStream) gone() <-chan struct{}           { return s.done }
func (s *flushStream) stalled() (bool, bool)           { return false, false }
func (s *flushStream) close()                          {}
func (s *flushStream) shorten(d time.Duration)         { s.timeout = min(s.timeout, d) }

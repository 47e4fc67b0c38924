package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/internal/workload"
)

// The closed loop's HTTP clients (-client).
const (
	// ClientTransport is net/http's Client: per request the worker hands
	// the request to the connection's writer goroutine and waits for its
	// reader goroutine (several goroutine wake-ups), and every request and
	// answer is allocated anew.
	ClientTransport = "transport"
	// ClientConn is one HTTP/1.1 keep-alive connection per worker, which
	// the worker writes and reads itself: one wake-up per request (the
	// answer arriving), requests that repeat (a Top-N of one board)
	// rendered once, answers read into a buffer the worker reuses. The
	// same requests on as many connections as -client transport: a cheaper
	// load generator, so that its own CPU and GC weigh less on what it
	// measures.
	ClientConn = "conn"
)

// connExec runs operations over HTTP/1.1 connections that each closed-loop
// worker owns (ForWorker). Plain http:// only: the load tool runs on
// loopback.
type connExec struct {
	api  *httpAPI
	addr string // host:port to dial
}

func newConnExec(api *httpAPI) (*connExec, error) {
	_, addr, err := plainAddr(api.base)
	if err != nil {
		return nil, err
	}
	return &connExec{api: api, addr: addr}, nil
}

// plainAddr parses the base URL of a -client conn target: plain http only
// (the load tool runs on loopback); addr is its host:port to dial.
func plainAddr(base string) (u *url.URL, addr string, err error) {
	if u, err = url.Parse(base); err != nil {
		return nil, "", err
	}
	if u.Scheme != "http" {
		return nil, "", fmt.Errorf("-client %s speaks plain http only, not %q", ClientConn, u.Scheme)
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return u, addr, nil
}

// ForWorker gives a worker its own connection (dialed at its first request).
func (e *connExec) ForWorker() interface {
	Executor
	Close()
} {
	return &connWorker{e: e, cache: map[[2]int][]byte{}}
}

// Do runs one operation on a connection of its own (the closed loop uses
// ForWorker instead).
func (e *connExec) Do(ctx context.Context, op *Op) Outcome {
	w := e.ForWorker()
	defer w.Close()
	return w.Do(ctx, op)
}

// connWorker is one worker's connection and buffers; not safe for
// concurrent use.
type connWorker struct {
	e     *connExec
	conn  net.Conn
	br    *bufio.Reader
	used  bool   // the connection has answered a request already
	req   []byte // the request being sent, when not cached
	body  []byte // the last answer's body
	cache map[[2]int][]byte
}

func (w *connWorker) Close() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
}

var errMalformed = errors.New("malformed HTTP answer")

func (w *connWorker) Do(ctx context.Context, op *Op) Outcome {
	req, err := w.request(op)
	if err != nil {
		return Outcome{Class: transportClass(err.Error())}
	}
	code, body, err := w.roundTrip(ctx, req)
	if err != nil && w.used && errors.Is(err, errReused) {
		// The server closed the kept-alive connection before this request
		// reached it (nothing was answered): once more on a new one, as
		// net/http's Transport does.
		code, body, err = w.roundTrip(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Outcome{Class: transportClass(err.Error())}
	}
	out := Outcome{Class: httpOutcome(op.Kind, code, body, "")}
	if op.Kind == workload.OpPage && out.Class == "" {
		if c := nextCursor(body); c != "" {
			out.Next = c
		}
	}
	return out
}

// errReused marks a failure on a reused connection before any byte of the
// answer arrived.
var errReused = errors.New("reused connection closed")

// roundTrip writes req and reads the answer: its status and body (valid
// until the next call).
func (w *connWorker) roundTrip(ctx context.Context, req []byte) (int, []byte, error) {
	if w.conn == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", w.e.addr)
		if err != nil {
			return 0, nil, err
		}
		w.conn, w.used = c, false
		if w.br == nil {
			w.br = bufio.NewReaderSize(c, 32<<10)
		} else {
			w.br.Reset(c)
		}
	}
	reused := w.used
	fail := func(err error) (int, []byte, error) {
		w.Close()
		return 0, nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Time{}
	}
	if err := w.conn.SetDeadline(deadline); err != nil {
		return fail(err)
	}
	if _, err := w.conn.Write(req); err != nil {
		if reused {
			err = fmt.Errorf("%w: %w", errReused, err)
		}
		return fail(err)
	}
	code, body, keep, err := w.readAnswer(reused)
	if err != nil {
		return fail(err)
	}
	w.used = true
	if !keep {
		w.Close()
	}
	return code, body, nil
}

// readAnswer reads one HTTP/1.x answer (1xx answers skipped): status, body
// (Content-Length, chunked, or up to the end of the connection) and whether
// the connection may carry another request.
func (w *connWorker) readAnswer(reused bool) (code int, body []byte, keep bool, err error) {
	br := w.br
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if reused && len(line) == 0 && (err == io.EOF || errors.Is(err, net.ErrClosed) || isReset(err)) {
				err = fmt.Errorf("%w: %w", errReused, err)
			}
			return 0, nil, false, err
		}
		// "HTTP/1.1 200 OK\r\n"
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return 0, nil, false, errMalformed
		}
		code, err = strconv.Atoi(string(line[9:12])) // no allocation: a 3-byte conversion
		if err != nil {
			return 0, nil, false, errMalformed
		}
		keep = line[7] == '1'
		length, chunked := -1, false
		for {
			h, err := br.ReadSlice('\n')
			if err != nil {
				return 0, nil, false, err
			}
			h = bytes.TrimRight(h, "\r\n")
			if len(h) == 0 {
				break
			}
			k, v, ok := bytes.Cut(h, []byte(":"))
			if !ok {
				return 0, nil, false, errMalformed
			}
			v = bytes.TrimSpace(v)
			switch {
			case bytes.EqualFold(k, []byte("Content-Length")):
				n, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || n < 0 || n > 1<<30 {
					return 0, nil, false, errMalformed
				}
				length = int(n)
			case bytes.EqualFold(k, []byte("Transfer-Encoding")):
				chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
			case bytes.EqualFold(k, []byte("Connection")):
				if bytes.EqualFold(v, []byte("close")) {
					keep = false
				}
			}
		}
		if code >= 100 && code < 200 {
			continue // an interim answer: the real one follows
		}
		w.body = w.body[:0]
		switch {
		case code == http.StatusNoContent || code == http.StatusNotModified:
		case chunked:
			if err := w.readChunked(); err != nil {
				return 0, nil, false, err
			}
		case length >= 0:
			w.body = growTo(w.body, length)
			if _, err := io.ReadFull(br, w.body); err != nil {
				return 0, nil, false, err
			}
		default: // the body ends with the connection
			keep = false
			for {
				if len(w.body) == cap(w.body) {
					w.body = append(w.body, 0)[:len(w.body)]
				}
				n, err := br.Read(w.body[len(w.body):cap(w.body)])
				w.body = w.body[:len(w.body)+n]
				if err == io.EOF {
					break
				}
				if err != nil {
					return 0, nil, false, err
				}
			}
		}
		return code, w.body, keep, nil
	}
}

// readChunked appends a chunked body to w.body (trailers skipped).
func (w *connWorker) readChunked() error {
	br := w.br
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 || n > 1<<30 {
			return errMalformed
		}
		if n == 0 {
			for { // trailers, up to the empty line
				t, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return nil
				}
			}
		}
		start := len(w.body)
		w.body = growTo(w.body, start+int(n))
		if _, err := io.ReadFull(br, w.body[start:]); err != nil {
			return err
		}
		crlf, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(crlf, "\r\n")) != 0 {
			return errMalformed
		}
	}
}

// growTo is b resized to n bytes, reallocated only when its capacity is
// short (the new bytes are not zeroed: they are read into next).
func growTo(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// isReset reports a network error other than a timeout (a reset, a closed
// connection).
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// request renders op as HTTP/1.1 bytes: the same request as -client
// transport sends (api.Target), without the User-Agent. A Top-N repeats
// exactly, so it is rendered once per operation spec and board.
func (w *connWorker) request(op *Op) ([]byte, error) {
	key := [2]int{op.Spec, op.Board}
	if op.Kind == workload.OpTop {
		if b, ok := w.cache[key]; ok {
			return b, nil
		}
	}
	t := w.e.api.Target(op)
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, err
	}
	b := w.req[:0]
	b = append(b, t.Method...)
	b = append(b, ' ')
	b = append(b, u.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, u.Host...)
	b = append(b, "\r\n"...)
	for k, vs := range t.Header {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if t.Body != nil || t.Method == http.MethodPost || t.Method == http.MethodPut {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(t.Body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, t.Body...)
	if op.Kind == workload.OpTop {
		c := bytes.Clone(b)
		w.cache[key] = c
		return c, nil
	}
	w.req = b
	return b, nil
}

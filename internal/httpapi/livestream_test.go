package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/live"
	"github.com/rankgate/rankgate/internal/rank"
)

// TestRawStreamWriteDeadline: on a connection taken over from net/http, a
// write to a reader that stops taking bytes fails at the stream's write
// timeout (so the subscriber is dropped), and the status line goes out once,
// with the first write, ahead of the parts.
func TestRawStreamWriteDeadline(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe() // unbuffered: a write waits for its read
	t.Cleanup(func() { server.Close(); client.Close() })
	s := &rawStream{conn: server, timeout: 100 * time.Millisecond, left: make(chan struct{}), status: []byte("HTTP/1.1 200 OK\r\n\r\n")}

	got := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := io.ReadAtLeast(client, b, len("HTTP/1.1 200 OK\r\n\r\n: live\n\nid: 1\n\n"))
		got <- string(b[:n])
	}()
	if err := s.write([]byte(": live\n\n")); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if err := s.write([]byte("id: 1"), []byte("\n\n")); err != nil {
		t.Fatalf("second write: %v", err)
	}
	if out := <-got; out != "HTTP/1.1 200 OK\r\n\r\n: live\n\nid: 1\n\n" {
		t.Fatalf("written: %q", out)
	}

	// Nobody reads now: the write must give up at its deadline.
	start := time.Now()
	err := s.write([]byte("id: 2\nevent: update\ndata: {}\n\n"))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a reader that stopped: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the write gave up after %s, write timeout 100ms", d)
	}
}

// TestRawStreamGone: the stream notices the client's end through its read
// of the connection (an EventSource sends nothing after its request).
func TestRawStreamGone(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	t.Cleanup(func() { server.Close() })
	s := &rawStream{conn: server, timeout: time.Second, left: make(chan struct{})}
	go s.watch()
	if _, err := client.Write([]byte("stray bytes are read and dropped")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.gone():
		t.Fatal("gone while the client is still there")
	case <-time.After(20 * time.Millisecond):
	}
	client.Close()
	select {
	case <-s.gone():
	case <-time.After(5 * time.Second):
		t.Fatal("the client closed, the stream did not notice within 5s")
	}
}

// tcpPair is a connected loopback TCP pair (server side, client side).
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestLiveWriterSendWithoutBlocking: the hub's write of an answer (Send)
// takes what the socket takes and never waits; what it leaves is written
// by the stream's goroutine (flushRest) before anything else, so the
// client reads every event whole and in order. A Send while bytes are left
// writes nothing (the answer waits as pending).
func TestLiveWriterSendWithoutBlocking(t *testing.T) {
	t.Parallel()
	server, client := tcpPair(t)
	rs := &rawStream{conn: server, timeout: 10 * time.Second, left: make(chan struct{})}
	if sc, ok := server.(syscall.Conn); ok {
		rs.raw, _ = sc.SyscallConn()
	}
	if !rs.canTry() {
		t.Skip("no write without blocking on this system") // only where canWritev is false
	}
	rs.next = time.Now().Add(time.Hour) // no stall check in this test
	w := &liveWriter{st: rs, sub: emptySubscription(t), id: 7, typ: "update", flush: make(chan struct{}, 1)}
	// More than loopback's socket buffers hold while nobody reads.
	big := bytes.Repeat([]byte("x"), 16<<20)
	start := time.Now()
	if !w.Send(big) || len(w.rest) == 0 {
		t.Fatalf("Send left %d bytes; want a partial write of a 16 MiB event", len(w.rest))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a write without blocking took %s", took)
	}
	select {
	case <-w.flush:
	default:
		t.Fatal("the bytes left were not handed to the stream's goroutine")
	}
	if w.Send([]byte(`{"n":2}`)) {
		t.Fatal("Send wrote while an earlier event's bytes were left")
	}
	left := w.rest
	w.rest = nil
	w.end()
	if w.Send([]byte(`{"n":3}`)) {
		t.Fatal("Send wrote after the stream's goroutine ended")
	}
	w.rest = left
	want := fmt.Sprintf("id: 8\nevent: update\ndata: %s\n\n", big)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(want))))
		got <- b
	}()
	if err := w.flushRest(); err != nil {
		t.Fatalf("flushRest: %v", err)
	}
	if b := <-got; !bytes.Equal(b, []byte(want)) {
		t.Fatalf("client read %d bytes, want the event whole (%d)", len(b), len(want))
	}
}

// emptySubscription is a subscription of a hub whose reads answer an empty
// board.
func emptySubscription(t *testing.T) *live.Subscription {
	t.Helper()
	h, err := live.New(live.Options{Reads: emptyReads{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	sub, err := h.Subscribe(context.Background(), "", live.Query{Board: gateway.BoardRef{Family: "f", Period: "current", Dimension: "national"}, Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

type emptyReads struct{}

func (emptyReads) Top(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
	return gateway.Page{}, nil
}

func (emptyReads) Member(context.Context, gateway.BoardRef, string, gateway.ReadOptions) (gateway.MemberStanding, error) {
	return gateway.MemberStanding{}, rank.Errorf(rank.CodeNotRanked, "not ranked")
}

func (emptyReads) Around(context.Context, gateway.BoardRef, string, int, gateway.ReadOptions) (gateway.Page, error) {
	return gateway.Page{}, rank.Errorf(rank.CodeNotRanked, "not ranked")
}

func TestAppendFrom(t *testing.T) {
	t.Parallel()
	parts := [][]byte{[]byte("abc"), []byte(""), []byte("de"), []byte("f")}
	for _, c := range []struct {
		name string
		n    int
		want string
	}{
		{"all", 0, "abcdef"},
		{"inside the first", 2, "cdef"},
		{"at a boundary", 3, "def"},
		{"inside a later part", 4, "ef"},
		{"the last byte", 5, "f"},
		{"nothing left", 6, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := string(appendFrom(nil, c.n, parts...)); got != c.want {
				t.Fatalf("appendFrom(%d) = %q, want %q", c.n, got, c.want)
			}
		})
	}
}

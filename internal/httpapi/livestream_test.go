package httpapi

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
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

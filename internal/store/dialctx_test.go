package store

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// dialCtx gives up when its context ends even when the dial does not watch
// it (go-redis's TLS dialer), and closes the connection that arrives late.
func TestDialCtxHonoursContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	late, peer := net.Pipe()
	defer peer.Close()
	blocking := func(context.Context, string, string) (net.Conn, error) {
		<-release // ignores its context, as tls.DialWithDialer does
		return late, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		c, err := dialCtx(ctx, blocking, "127.0.0.1:1")
		if c != nil {
			err = errors.New("a connection after the context ended")
		}
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("dialCtx after cancel: %v, want context.Canceled", err)
	}
	close(release) // the dial ends late: its connection must be closed
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the late connection is still open (read: %v, want EOF)", err)
	}

	ok, peer2 := net.Pipe()
	defer peer2.Close()
	c, err := dialCtx(context.Background(), func(context.Context, string, string) (net.Conn, error) { return ok, nil }, "127.0.0.1:1")
	if err != nil || c != ok {
		t.Fatalf("dialCtx of a dial that answers: %v, %v", c, err)
	}
	_ = c.Close()
}

package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// guardTimeout only keeps a broken server from hanging the test; no
// assertion depends on it.
const guardTimeout = 30 * time.Second

// sockBuf bounds both ends' socket buffers: loopback's auto-tuned ones
// (several MiB) would swallow a 2 MiB body whole and hide the problem that
// a real network shows.
const sockBuf = 32 << 10

// smallBufListener gives accepted connections small receive buffers.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(sockBuf)
	}
	return c, err
}

// dialSmall dials addr with a small send buffer.
func dialSmall(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).SetWriteBuffer(sockBuf)
	return c, nil
}

// lingerServer serves h on a real loopback listener and reports each of its
// connections' close on the returned channel.
func lingerServer(t *testing.T, h http.Handler) (addr string, closed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBufListener{srv.Listener}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			ch <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), ch
}

// writeAllThenRead is a client in the style of Python's urllib and
// requests: it writes the request head and the whole body and only then
// reads the answer. It returns the answer, or the error that ended it.
func writeAllThenRead(addr, head string, body []byte, chunked bool) (*http.Response, []byte, error) {
	conn, err := dialSmall(addr)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(guardTimeout))
	if _, err := io.WriteString(conn, head); err != nil {
		return nil, nil, fmt.Errorf("writing the head: %w", err)
	}
	if chunked {
		const chunk = 64 << 10
		for off := 0; off < len(body); off += chunk {
			part := body[off:min(off+chunk, len(body))]
			if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(part), part); err != nil {
				return nil, nil, fmt.Errorf("writing the body at byte %d: %w", off, err)
			}
		}
		if _, err := io.WriteString(conn, "0\r\n\r\n"); err != nil {
			return nil, nil, fmt.Errorf("writing the last chunk: %w", err)
		}
	} else if _, err := conn.Write(body); err != nil {
		return nil, nil, fmt.Errorf("writing the body: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, data, fmt.Errorf("reading the answer's body: %w", err)
	}
	// The server closes after a refusal: with the body drained, that is a
	// clean end of stream, not a reset.
	if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
		return resp, data, fmt.Errorf("after the answer: %d more bytes, err %v", len(rest), err)
	}
	return resp, data, nil
}

func requestHead(method, path string, extra ...string) string {
	return method + " " + path + " HTTP/1.1\r\nHost: rankgate.test\r\nContent-Type: application/json\r\n" +
		strings.Join(extra, "") + "\r\n"
}

// TestOversizedBodyAnsweredToWriteFirstClients: a client that writes a
// 2 MiB body before it reads still gets the 413 too_large (or the 401 of a
// refused token) — the server reads and discards the body it refused
// instead of resetting the connection under the client's last writes.
func TestOversizedBodyAnsweredToWriteFirstClients(t *testing.T) {
	t.Parallel()
	body := []byte(`{"event_id":"e","reason":"` + strings.Repeat("x", 2<<20) + `"}`)
	cl := fmt.Sprintf("Content-Length: %d\r\n", len(body))
	const te = "Transfer-Encoding: chunked\r\n"
	auth, err := NewAuth(AuthOptions{Tokens: []Token{{Name: "W", Secret: "good", Scopes: []string{ScopeWrite}}}})
	if err != nil {
		t.Fatal(err)
	}
	const good = "Authorization: Bearer good\r\n"
	tests := []struct {
		title      string
		head       string
		chunked    bool
		wantStatus int
		wantCode   rank.Code
	}{
		{"Content-Length 2 MiB", requestHead("POST", "/v1/events", good, cl), false, 413, rank.CodeTooLarge},
		{"chunked 2 MiB", requestHead("POST", "/v1/events", good, te), true, 413, rank.CodeTooLarge},
		{"batch, Content-Length 2 MiB", requestHead("POST", "/v1/events:batch", good, cl), false, 413, rank.CodeTooLarge},
		{"refused token, Content-Length 2 MiB", requestHead("POST", "/v1/events", cl), false, 401, rank.CodeUnauthenticated},
		{"no route, Content-Length 2 MiB", requestHead("POST", "/v1/nowhere", good, cl), false, 404, rank.CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			svc := &fakeService{applyEvent: func(context.Context, gateway.Event) (gateway.EventResult, error) {
				return gateway.EventResult{}, errors.New("an oversized event reached the service")
			}}
			hs := newHarness(t, svc, auth.Wrap)
			srv := hs.raw.(*server)
			// lingerBytes as configured; lingerTime (TestLingerIsBounded)
			// long enough for a starved CI machine to send 2 MiB.
			srv.lingerTime = guardTimeout
			addr, _ := lingerServer(t, srv)
			resp, data, err := writeAllThenRead(addr, tc.head, body, tc.chunked)
			if err != nil {
				t.Fatalf("write-first client: %v", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %.200s", resp.StatusCode, tc.wantStatus, data)
			}
			var e apiError
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatalf("answer is not the error JSON: %v: %.200s", err, data)
			}
			if e.Error.Code != string(tc.wantCode) {
				t.Errorf("code = %q, want %q", e.Error.Code, tc.wantCode)
			}
			if !resp.Close {
				t.Error("the refusal does not close the connection")
			}
		})
	}
}

// TestLingerIsBounded: a client that keeps sending past the linger bound,
// or stops sending without reading, loses its connection; the server gives
// up on it instead of serving it for ever.
func TestLingerIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title string
		// send is how much body the client writes before it stops writing
		// (and reads); unbounded when 0.
		send       int
		declared   int // Content-Length; chunked when 0
		lingerTime time.Duration
		bytes      int64
	}{
		// Keeps writing: the server stops reading after lingerBytes and
		// closes; the client's writes fail.
		{title: "endless chunked body", lingerTime: time.Hour, bytes: 4 << 20},
		{title: "endless body under a huge Content-Length", declared: 1 << 40, lingerTime: time.Hour, bytes: 4 << 20},
		// Stalls: the server closes after lingerTime.
		{title: "stalls after 64 KiB of 2 MiB", send: 64 << 10, declared: 2 << 20, lingerTime: 500 * time.Millisecond, bytes: 8 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, &fakeService{}, nil)
			srv := hs.raw.(*server)
			srv.lingerTime, srv.lingerBytes = tc.lingerTime, tc.bytes
			addr, closed := lingerServer(t, srv)

			conn, err := dialSmall(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(guardTimeout))
			head := requestHead("POST", "/v1/events", "Transfer-Encoding: chunked\r\n")
			if tc.declared > 0 {
				head = requestHead("POST", "/v1/events", fmt.Sprintf("Content-Length: %d\r\n", tc.declared))
			}
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			chunk := []byte(strings.Repeat("x", 64<<10))
			sent, werr := 0, error(nil)
			for tc.send == 0 || sent < tc.send {
				var err error
				if tc.declared == 0 {
					_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
				} else {
					_, err = conn.Write(chunk)
				}
				if err != nil {
					werr = err
					break
				}
				sent += len(chunk)
			}
			if tc.send == 0 {
				// The only way out of the loop is a failed write.
				var ne net.Error
				if errors.As(werr, &ne) && ne.Timeout() {
					t.Fatalf("the server was still reading after %d bytes (bound %d)", sent, tc.bytes)
				}
				t.Logf("write failed after %d bytes (bound %d): %v", sent, tc.bytes, werr)
			} else if werr != nil {
				t.Fatalf("write failed after %d of %d bytes: %v", sent, tc.send, werr)
			}
			select {
			case <-closed: // the server closed the connection: its handler returned
			case <-time.After(guardTimeout):
				t.Fatal("the server never closed the connection")
			}
			if tc.send > 0 {
				// The stalled client still finds the 413 it was sent.
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("status = %d, want 413", resp.StatusCode)
				}
			}
		})
	}
}

// TestOversizedBodyExpectingContinue: a client that waits for 100 Continue
// (curl) gets its 413 at once, and the server does not wait for a body the
// client will not send.
func TestOversizedBodyExpectingContinue(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, &fakeService{}, nil)
	srv := hs.raw.(*server)
	srv.lingerTime = time.Hour // lingering would outlast the client's guard deadline
	addr, closed := lingerServer(t, srv)
	conn, err := dialSmall(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(guardTimeout))
	head := requestHead("POST", "/v1/events", "Expect: 100-continue\r\n", fmt.Sprintf("Content-Length: %d\r\n", 2<<20))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413 (no 100 Continue)", resp.StatusCode)
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
	<-closed
}

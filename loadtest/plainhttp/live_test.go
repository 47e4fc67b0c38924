package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// readEvent reads one event's lines up to the blank line that ends it.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event: %v (so far %q)", err, b.String())
		}
		if l == "\n" {
			return b.String()
		}
		b.WriteString(l)
	}
}

// A stream gets its snapshot at once, then an event in each round whose
// draw falls under its rate, with increasing ids; a stream with rate 0 gets
// none; a client that goes is removed.
func TestLive(t *testing.T) {
	t.Parallel()
	body := []byte(`{"entries":[]}`)
	p := newPusher(body)
	srv := httptest.NewServer(handler(body, p))
	defer srv.Close()
	open := func(rate string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /live?rate="+rate+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %v", res.StatusCode, res.Header)
		}
		if got, want := readEvent(t, br), "id: 1\nevent: snapshot\ndata: "+string(body)+"\n"; got != want {
			t.Fatalf("snapshot %q, want %q", got, want)
		}
		return c, br
	}
	half, halfR := open("0.5")
	none, _ := open("0")
	defer none.Close()
	waitFor := func(n int) {
		for deadline := time.Now().Add(5 * time.Second); ; {
			p.mu.Lock()
			got := len(p.subs)
			p.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d streams, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(2)
	if n := p.round(func() float64 { return 0.7 }); n != 0 {
		t.Fatalf("a draw of 0.7 wrote %d events, want 0", n)
	}
	if n := p.round(func() float64 { return 0.2 }); n != 1 {
		t.Fatalf("a draw of 0.2 wrote %d events, want 1 (the rate-0.5 stream)", n)
	}
	if got, want := readEvent(t, halfR), "id: 2\nevent: update\ndata: "+string(body)+"\n"; got != want {
		t.Fatalf("update %q, want %q", got, want)
	}
	_ = half.Close()
	waitFor(1)
}

func TestLiveBadRate(t *testing.T) {
	t.Parallel()
	body := []byte(`{}`)
	for _, rate := range []string{"x", "-0.1", "1.5"} {
		rec := httptest.NewRecorder()
		handler(body, newPusher(body)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/live?rate="+rate, nil))
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("rate %q: %d, want 400", rate, rec.Code)
		}
	}
}

// /metrics carries the CPU seconds and the heap in use under the gateway's names.
func TestMetrics(t *testing.T) {
	t.Parallel()
	body := []byte(`{}`)
	get := func() string {
		rec := httptest.NewRecorder()
		handler(body, newPusher(body)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	first := get()
	if !strings.HasPrefix(first, "process_cpu_seconds_total ") || !strings.Contains(first, "\ngo_memstats_heap_inuse_bytes ") {
		t.Fatalf("metrics %q", first)
	}
}

package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// flaky is a gateway stand-in that fails the first n tries of every
// request with status (and Retry-After when set), then answers ok; it
// records every body it got.
type flaky struct {
	mu         sync.Mutex
	n          int
	status     int
	retryAfter string
	tries      int
	bodies     []string
	ok         string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.tries++
	f.bodies = append(f.bodies, string(b))
	fail := f.tries <= f.n
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if fail {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(f.status)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"try again"}}`))
		return
	}
	_, _ = w.Write([]byte(f.ok))
}

func newFlaky(t *testing.T, f *flaky, r Retry) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithRetry(r))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failing configures a flaky.
type failing struct {
	n, status int
	ok        string
}

const eventOK = `{"event_id":"e1","duplicate":false,"period":"all","boards":[]}`

func TestRetries(t *testing.T) {
	t.Parallel()
	fast := Retry{Attempts: 4, Base: time.Millisecond, Max: 20 * time.Millisecond}
	tests := []struct {
		name      string
		f         failing
		call      func(c *Client) error
		wantTries int
		wantCode  string // "" : success
	}{
		{"event retried through 503s keeps its id",
			failing{n: 2, status: 503, ok: eventOK},
			func(c *Client) error {
				_, err := c.PostEvent(context.Background(), Event{EventID: "e1", Family: "f", User: "u", Delta: Int(1)})
				return err
			}, 3, ""},
		{"429 is retried",
			failing{n: 1, status: 429, ok: eventOK},
			func(c *Client) error {
				_, err := c.PostEvent(context.Background(), Event{EventID: "e1", Family: "f", User: "u", Delta: Int(1)})
				return err
			}, 2, ""},
		{"gives up after Attempts",
			failing{n: 10, status: 503, ok: eventOK},
			func(c *Client) error {
				_, err := c.PostEvent(context.Background(), Event{EventID: "e1", Family: "f", User: "u", Delta: Int(1)})
				return err
			}, 4, "unavailable"},
		{"400 is not retried",
			failing{n: 10, status: 400, ok: eventOK},
			func(c *Client) error {
				_, err := c.PostEvent(context.Background(), Event{EventID: "e1", Family: "f", User: "u", Delta: Int(1)})
				return err
			}, 1, "unavailable"},
		{"500 is not retried",
			failing{n: 10, status: 500, ok: eventOK},
			func(c *Client) error {
				_, err := c.Top(context.Background(), Board{"f", "current", "national"}, 10, ReadOptions{})
				return err
			}, 1, "unavailable"},
		{"a snapshot is sent once",
			failing{n: 10, status: 503, ok: `{}`},
			func(c *Client) error {
				_, err := c.CreateSnapshot(context.Background(), Board{"f", "current", "national"}, 10, 60)
				return err
			}, 1, "unavailable"},
		{"a review decision is sent once",
			failing{n: 10, status: 503, ok: `{}`},
			func(c *Client) error {
				_, err := c.DecideReview(context.Background(), "7", "f", "current", "ops", true)
				return err
			}, 1, "unavailable"},
		{"a read is retried",
			failing{n: 1, status: 503, ok: `{"board":"f/all/national","source":"primary","as_of":"2026-01-01T00:00:00Z","entries":[]}`},
			func(c *Client) error {
				_, err := c.Top(context.Background(), Board{"f", "current", "national"}, 10, ReadOptions{})
				return err
			}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &flaky{n: tc.f.n, status: tc.f.status, ok: tc.f.ok}
			c := newFlaky(t, f, fast)
			err := tc.call(c)
			if got := Code(err); got != tc.wantCode || (tc.wantCode == "" && err != nil) {
				t.Fatalf("err = %v (code %q), want code %q", err, got, tc.wantCode)
			}
			if f.tries != tc.wantTries {
				t.Fatalf("%d tries, want %d", f.tries, tc.wantTries)
			}
			for _, b := range f.bodies[1:] {
				if b != f.bodies[0] {
					t.Fatalf("a retry sent another body: %q then %q", f.bodies[0], b)
				}
			}
		})
	}
}

// TestRetryAfterHonoured: the wait before a retry is at least Retry-After.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	f := &flaky{n: 1, status: 503, retryAfter: "1", ok: eventOK}
	c := newFlaky(t, f, Retry{Attempts: 2, Base: time.Millisecond, Max: 5 * time.Second})
	start := time.Now()
	if _, err := c.PostEvent(context.Background(), Event{EventID: "e1", Family: "f", User: "u", Delta: Int(1)}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("retried after %v, want ≥ the 1s Retry-After", waited)
	}
}

// TestRetryStopsWithContext: a cancelled context ends the backoff at once.
func TestRetryStopsWithContext(t *testing.T) {
	t.Parallel()
	f := &flaky{n: 10, status: 503, retryAfter: "30", ok: eventOK}
	c := newFlaky(t, f, Retry{Attempts: 4, Base: time.Millisecond, Max: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.PostEvent(ctx, Event{EventID: "e1", Family: "f", User: "u", Delta: Int(1)})
		done <- err
	}()
	for {
		f.mu.Lock()
		n := f.tries
		f.mu.Unlock()
		if n >= 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestEventNeedsID(t *testing.T) {
	t.Parallel()
	c, err := New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PostEvent(context.Background(), Event{Family: "f", User: "u", Delta: Int(1)}); err == nil {
		t.Fatal("an event without an id was sent")
	}
	if _, err := c.PostEvents(context.Background(), []Event{{EventID: "a"}, {}}); err == nil {
		t.Fatal("a batch with an event without an id was sent")
	}
	if _, err := c.Correct(context.Background(), Correction{Family: "f"}); err == nil {
		t.Fatal("a correction without an id was sent")
	}
}

func TestBatchItems(t *testing.T) {
	t.Parallel()
	var items []BatchItem
	data := `[{"event_id":"a","duplicate":true,"period":"all","boards":[{"board":"f/all/national","points":3}]},
		{"error":{"code":"period_closed","message":"closed","field":"at"}}]`
	if err := json.Unmarshal([]byte(data), &items); err != nil {
		t.Fatal(err)
	}
	if items[0].Error != nil || !items[0].Duplicate || items[0].Boards[0].Points != 3 {
		t.Errorf("item 0 = %+v", items[0])
	}
	if items[1].Error == nil || items[1].Error.Code != "period_closed" || items[1].Error.Field != "at" {
		t.Errorf("item 1 = %+v", items[1])
	}
}

func TestNewRefusesBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

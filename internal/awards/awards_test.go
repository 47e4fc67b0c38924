package awards

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/ledger"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef")
	body := []byte(`{"type":"award","user":"u1"}`)
	now := time.Unix(1_800_000_000, 0)
	good := Sign(secret, now.Unix(), body)
	if !strings.HasPrefix(good, "t=1800000000,v1=") || len(good) != len("t=1800000000,v1=")+64 {
		t.Fatalf("Sign = %q", good)
	}
	for _, tc := range []struct {
		name   string
		secret []byte
		header string
		body   []byte
		now    time.Time
		ok     bool
	}{
		{"valid", secret, good, body, now, true},
		{"valid, spaces after commas", secret, strings.Replace(good, ",", ", ", 1), body, now, true},
		{"tampered body", secret, good, []byte(`{"type":"award","user":"u2"}`), now, false},
		{"wrong secret", []byte("another-secret-16"), good, body, now, false},
		{"tampered time", secret, strings.Replace(good, "t=1800000000", "t=1800000001", 1), body, now, false},
		{"too old", secret, good, body, now.Add(10 * time.Minute), false},
		{"no v1", secret, "t=1800000000", body, now, false},
		{"garbage", secret, "v1=zz,t=x", body, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := Verify(tc.secret, tc.header, tc.body, tc.now, 5*time.Minute); (err == nil) != tc.ok {
				t.Fatalf("Verify = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	d, err := New(&fakeStore{}, Options{URL: "http://127.0.0.1:1", Secret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 10: 512 * time.Second,
		11: 10 * time.Minute, 40: 10 * time.Minute} {
		if got := d.Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

type fakeStore struct {
	mu       sync.Mutex
	due      []ledger.Delivery
	attempts map[string][]ledger.Attempt
}

func (f *fakeStore) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]ledger.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ledger.Delivery(nil), f.due...), nil
}

func (f *fakeStore) RecordAttempt(ctx context.Context, d ledger.Delivery, a ledger.Attempt) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attempts == nil {
		f.attempts = map[string][]ledger.Attempt{}
	}
	f.attempts[d.Key] = append(f.attempts[d.Key], a)
	return nil
}

// One Pump: the headers a receiver relies on, a jittered retry within
// [half, all] of the backoff, and failed at the last attempt.
func TestPump(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef")
	var mu sync.Mutex
	seen := map[string]http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get(HeaderIdempotencyKey)] = r.Header.Clone()
		mu.Unlock()
		if r.Header.Get(HeaderIdempotencyKey) == "ok" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	st := &fakeStore{due: []ledger.Delivery{
		{Kind: "award", Key: "ok", Body: []byte(`{}`)},
		{Kind: "award", Key: "retry", Body: []byte(`{}`), Attempts: 3},
		{Kind: "period.frozen", Key: "last", Body: []byte(`{}`), Attempts: 4},
	}}
	d, err := New(st, Options{URL: srv.URL, Secret: secret, MaxAttempts: 5, Jitter: func() float64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	d.Pump(context.Background(), now)
	if a := st.attempts["ok"]; len(a) != 1 || !a[0].Delivered {
		t.Errorf("ok: %+v", a)
	}
	if a := st.attempts["retry"]; len(a) != 1 || a[0].Delivered || a[0].Failed || !a[0].Next.Equal(now.Add(8*time.Second)) || a[0].Error == "" {
		t.Errorf("retry (4th attempt, backoff 8s, jitter 1): %+v", a)
	}
	if a := st.attempts["last"]; len(a) != 1 || !a[0].Failed {
		t.Errorf("last (5th of 5): %+v", a)
	}
	h := seen["ok"]
	if h.Get("Content-Type") != "application/json" || Verify(secret, h.Get(HeaderSignature), []byte(`{}`), now, time.Minute) != nil {
		t.Errorf("headers: %v", h)
	}
}

package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/store"
)

func TestReady(t *testing.T) {
	t.Parallel()

	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		ctx := ctxT(t, 10*time.Second)
		r, err := store.Ready(ctx, e.c)
		if err != nil {
			t.Fatalf("Ready: %v", err)
		}
		if !r.Cluster || r.State != "ok" || len(r.Warnings) != 0 {
			t.Errorf("Ready = %+v, want cluster ok", r)
		}
		if err := e.s.Ready(ctx); err != nil {
			t.Errorf("Store.Ready: %v", err)
		}
	})

	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		addr := startRedis(t, "--maxmemory-policy", "allkeys-lru")
		c, err := store.NewClient(store.ClientOptions{Addrs: []string{addr}, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, ok := c.(*redis.Client); !ok {
			t.Fatalf("NewClient with one addr returned %T, want *redis.Client", c)
		}
		s, err := store.New(c, nil, store.Options{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 10*time.Second)

		// Sequential: each case sets the policy, then asks.
		cases := []struct {
			name    string
			policy  string
			wantErr string // "" = ready
		}{
			{"allkeys-lru evicts boards", "allkeys-lru", "noeviction"},
			{"volatile-ttl evicts boards", "volatile-ttl", "noeviction"},
			{"noeviction is ready", "noeviction", ""},
		}
		for _, tc := range cases {
			if tc.policy != "allkeys-lru" { // the server started with allkeys-lru
				if err := c.ConfigSet(ctx, "maxmemory-policy", tc.policy).Err(); err != nil {
					t.Fatalf("%s: CONFIG SET: %v", tc.name, err)
				}
			}
			r, err := store.Ready(ctx, c)
			if r.Cluster {
				t.Errorf("%s: Cluster = true on a standalone node", tc.name)
			}
			if tc.wantErr == "" {
				if err != nil || r.State != "ok" {
					t.Errorf("%s: Ready = %+v, %v; want ok", tc.name, r, err)
				}
				if err := s.Ready(ctx); err != nil {
					t.Errorf("%s: Store.Ready: %v", tc.name, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.policy) {
				t.Errorf("%s: Ready err = %v, want one naming %q and %q", tc.name, err, tc.policy, tc.wantErr)
			}
			if r.State != "fail" {
				t.Errorf("%s: State = %q, want fail", tc.name, r.State)
			}
			if err := s.Ready(ctx); err == nil {
				t.Errorf("%s: Store.Ready = nil, want an error", tc.name)
			}
		}
	})
}

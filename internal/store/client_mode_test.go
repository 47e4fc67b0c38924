package store_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// TestNewClientMode: the client's mode follows what the node is, not how
// many addresses the config lists — one seed of a cluster gives a cluster
// client that reaches every slot; one standalone node gives a plain client;
// an address nobody answers is an error naming it, not a guess.
func TestNewClientMode(t *testing.T) {
	t.Parallel()
	opts := func(addr string) store.ClientOptions {
		return store.ClientOptions{Addrs: []string{addr}, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second}
	}

	t.Run("one seed of a cluster", func(t *testing.T) {
		t.Parallel()
		seed := testcluster.Addrs(t)[0]
		c, err := store.NewClient(opts(seed))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, ok := c.(*redis.ClusterClient); !ok {
			t.Fatalf("NewClient(%s) = %T, want *redis.ClusterClient", seed, c)
		}
		// Keys of many slots, most of them on other masters than the seed:
		// a plain client would get MOVED for those.
		ctx := ctxT(t, 10*time.Second)
		prefix := testcluster.Prefix(t)
		for i := range 32 {
			key := prefix + ":mode:" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			if err := c.Set(ctx, key, "x", time.Minute).Err(); err != nil {
				t.Fatalf("SET %s through one seed: %v", key, err)
			}
			if err := c.Unlink(ctx, key).Err(); err != nil {
				t.Fatalf("UNLINK %s: %v", key, err)
			}
		}
	})

	t.Run("one standalone node", func(t *testing.T) {
		t.Parallel()
		addr := startRedis(t)
		c, err := store.NewClient(opts(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, ok := c.(*redis.Client); !ok {
			t.Fatalf("NewClient(%s) = %T, want *redis.Client", addr, c)
		}
	})

	t.Run("nobody answers", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close() // a port that refuses connections
		c, err := store.NewClient(opts(addr))
		if err == nil {
			_ = c.Close()
			t.Fatalf("NewClient(%s) with nothing listening: no error", addr)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name %s", err, addr)
		}
	})
}

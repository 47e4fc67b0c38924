//go:build faults

package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// mapWatch records when a stack's own Redis client (its slot map) first
// routes a slot of the victim to another node: with Redis's promotion
// and the first success after it, it splits an outage into Redis's part,
// the client's (slot map reload) and the request's own.
type mapWatch struct {
	mu      sync.Mutex
	moved   time.Duration // 0: not seen
	stopc   chan struct{}
	done    chan struct{}
	enabled bool
}

// watchMap polls (every 20 ms, no I/O: the client's current slot map,
// lazily reloaded as any request would) which node the stack's client
// sends key of victim's slots to.
func (s *stack) watchMap(t0 time.Time, tp topology, victim int) *mapWatch {
	key := ""
	for i := 0; i < users && key == ""; i++ {
		u := userName(i)
		if k := s.keysOf("national", u).Z; tp.ownerOf(shard.Slot(k)) == victim {
			key = k
		}
	}
	return s.watchKey(t0, key)
}

// watchKey is watchMap for one key of the victim's slots ("": none).
func (s *stack) watchKey(t0 time.Time, key string) *mapWatch {
	w := &mapWatch{stopc: make(chan struct{}), done: make(chan struct{})}
	cc, ok := s.rw.(*redis.ClusterClient)
	if !ok || key == "" {
		close(w.done)
		return w
	}
	w.enabled = true
	ctx := context.Background()
	first, err := cc.MasterForKey(ctx, key)
	if err != nil {
		close(w.done)
		return w
	}
	old := first.Options().Addr
	go func() {
		defer close(w.done)
		deadline := t0.Add(40 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-w.stopc:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n, err := cc.MasterForKey(ctx, key); err == nil && n.Options().Addr != old {
				w.mu.Lock()
				w.moved = time.Since(t0)
				w.mu.Unlock()
				return
			}
		}
	}()
	return w
}

func (w *mapWatch) stop() {
	select {
	case <-w.stopc:
	default:
		close(w.stopc)
	}
	<-w.done
}

// at is when the client moved the victim's slots (0: never).
func (w *mapWatch) at() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.moved
}

func (w *mapWatch) String() string {
	switch d := w.at(); {
	case !w.enabled:
		return "n/a"
	case d == 0:
		return "never"
	default:
		return fmt.Sprintf("+%s", d.Round(10*time.Millisecond))
	}
}

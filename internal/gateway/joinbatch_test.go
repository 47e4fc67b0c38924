package gateway

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/rankgate/rankgate/internal/store"
)

// blockingJoins is a joinFunc fake: each call is recorded, then waits for a
// release; it seats members up to a bound like join.lua.
type blockingJoins struct {
	mu      sync.Mutex
	calls   [][]string
	seated  map[string]bool
	entered chan int // the call's index, sent when it starts
	release chan error
}

func newBlockingJoins() *blockingJoins {
	return &blockingJoins{seated: map[string]bool{}, entered: make(chan int, 16), release: make(chan error)}
}

func (f *blockingJoins) run(ctx context.Context, k joinKeys, members []string, maxSize, nowMs int64) ([]store.JoinResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(members))
	i := len(f.calls) - 1
	f.mu.Unlock()
	f.entered <- i
	if err := <-f.release; err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]store.JoinResult, len(members))
	for j, m := range members {
		switch {
		case f.seated[m]:
			out[j].Status = store.JoinIn
		case int64(len(f.seated)) >= maxSize:
			out[j].Status = store.JoinFull
		default:
			f.seated[m] = true
			out[j].Status = store.JoinJoined
		}
		out[j].Size = int64(len(f.seated))
	}
	return out, nil
}

func TestJoinBatcher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("joins arriving during a call go out together in arrival order", func(t *testing.T) {
		t.Parallel()
		f := newBlockingJoins()
		b := newJoinBatcher(f.run)
		type answer struct {
			r   store.JoinResult
			err error
		}
		first := make(chan answer, 1)
		go func() {
			r, err := b.join(ctx, joinKeys{seats: "seats", meta: "meta"}, "u0", 3, 1)
			first <- answer{r, err}
		}()
		<-f.entered // the first call is in flight with u0 alone
		var wg sync.WaitGroup
		got := make([]answer, 5)
		for i := 1; i <= 5; i++ {
			// queued one at a time, so that arrival order is known
			wg.Go(func() {
				r, err := b.join(ctx, joinKeys{seats: "seats", meta: "meta"}, fmt.Sprintf("u%d", i), 3, 1)
				got[i-1] = answer{r, err}
			})
			waitPending(t, b, "seats", i)
		}
		f.release <- nil
		if a := <-first; a.err != nil || a.r.Status != store.JoinJoined {
			t.Fatalf("first join: %+v", a)
		}
		<-f.entered
		f.release <- nil
		wg.Wait()
		if len(f.calls) != 2 || !slices.Equal(f.calls[1], []string{"u1", "u2", "u3", "u4", "u5"}) {
			t.Fatalf("calls = %v, want [[u0] [u1 u2 u3 u4 u5]]", f.calls)
		}
		want := []store.JoinStatus{store.JoinJoined, store.JoinJoined, store.JoinFull, store.JoinFull, store.JoinFull}
		for i, a := range got {
			if a.err != nil || a.r.Status != want[i] {
				t.Errorf("u%d: %+v, want %s", i+1, a, want[i])
			}
		}
		if waitPending(t, b, "seats", -1); len(b.queues) != 0 {
			t.Errorf("queues left: %v", b.queues)
		}
	})

	t.Run("a failed call fails each of its joins", func(t *testing.T) {
		t.Parallel()
		f := newBlockingJoins()
		b := newJoinBatcher(f.run)
		errc := make(chan error, 1)
		go func() {
			_, err := b.join(ctx, joinKeys{seats: "seats", meta: "meta"}, "u0", 10, 1)
			errc <- err
		}()
		<-f.entered
		boom := errors.New("shard down")
		f.release <- boom
		if err := <-errc; !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
	})

	t.Run("a caller that gave up is left out of the next call", func(t *testing.T) {
		t.Parallel()
		f := newBlockingJoins()
		b := newJoinBatcher(f.run)
		go func() { _, _ = b.join(ctx, joinKeys{seats: "seats", meta: "meta"}, "u0", 10, 1) }()
		<-f.entered
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := b.join(cctx, joinKeys{seats: "seats", meta: "meta"}, "gone", 10, 1)
			errc <- err
		}()
		waitPending(t, b, "seats", 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			if r, err := b.join(ctx, joinKeys{seats: "seats", meta: "meta"}, "stays", 10, 1); err != nil || r.Status != store.JoinJoined {
				t.Errorf("stays: %+v %v", r, err)
			}
		})
		waitPending(t, b, "seats", 2)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
		f.release <- nil
		<-f.entered
		f.release <- nil
		wg.Wait()
		if !slices.Equal(f.calls[1], []string{"stays"}) {
			t.Fatalf("second call = %v, want [stays]", f.calls[1])
		}
	})

	t.Run("seats hashes are batched apart", func(t *testing.T) {
		t.Parallel()
		f := newBlockingJoins()
		b := newJoinBatcher(f.run)
		var wg sync.WaitGroup
		for _, seats := range []string{"a", "b"} {
			wg.Go(func() { _, _ = b.join(ctx, joinKeys{seats: seats, meta: "meta"}, "u", 10, 1) })
		}
		<-f.entered
		<-f.entered // both in flight at once: neither waits for the other
		f.release <- nil
		f.release <- nil
		wg.Wait()
	})
}

// waitPending waits until the queue of seats holds n pending joins (n < 0:
// until the batcher has no queue for it). It polls the batcher's own state,
// yielding between looks; the test's deadline bounds it.
func waitPending(t *testing.T, b *joinBatcher, seats string, n int) {
	t.Helper()
	for {
		b.mu.Lock()
		q, ok := b.queues[seats]
		done := (n < 0 && !ok) || (n >= 0 && ok && len(q.pending) == n)
		b.mu.Unlock()
		if done {
			return
		}
		runtime.Gosched()
	}
}

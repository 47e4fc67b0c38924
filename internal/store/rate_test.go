package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The window counts at most limit events per member in any window, an event
// id once, and answers how long until a slot frees up; two stores (two
// gateways) on one cluster share it.
func TestCountEventWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e2 := newEnv(t)
	ctx := ctxT(t, 15*time.Second)
	key := e.layout.MemberRate("u1", "casual")
	const limit = 5
	for i := 0; i < limit; i++ {
		s := e.s
		if i%2 == 1 {
			s = e2.s // the other gateway
		}
		retry, err := s.CountEvent(ctx, key, fmt.Sprintf("e%d", i), limit, time.Minute)
		if err != nil || retry != 0 {
			t.Fatalf("event %d: retry %s, err %v; want counted", i, retry, err)
		}
	}
	// A retry of a counted event is not a new event.
	if retry, err := e2.s.CountEvent(ctx, key, "e0", limit, time.Minute); err != nil || retry != 0 {
		t.Fatalf("replay of e0: retry %s, err %v; want counted once, allowed", retry, err)
	}
	retry, err := e2.s.CountEvent(ctx, key, "e-over", limit, time.Minute)
	if err != nil || retry <= 0 || retry > time.Minute {
		t.Fatalf("event %d: retry %s, err %v; want refused with 0 < retry ≤ 1m", limit+1, retry, err)
	}
	if n := e.c.ZCard(ctx, key).Val(); n != limit {
		t.Errorf("window holds %d events, want %d (a refused event is not counted)", n, limit)
	}
	if ttl := e.c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("window TTL %s, want within (0, 1m]: an idle member's window goes away", ttl)
	}
	// Another member and another family have windows of their own.
	for _, k := range []string{e.layout.MemberRate("u2", "casual"), e.layout.MemberRate("u1", "other")} {
		if retry, err := e.s.CountEvent(ctx, k, "e-over", limit, time.Minute); err != nil || retry != 0 {
			t.Errorf("%s: retry %s, err %v; want counted", k, retry, err)
		}
	}
}

// A short window frees its slots as events age out.
func TestCountEventWindowSlides(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 15*time.Second)
	key := e.layout.MemberRate("u1", "casual")
	if retry, err := e.s.CountEvent(ctx, key, "a", 1, 300*time.Millisecond); err != nil || retry != 0 {
		t.Fatalf("first: %s %v", retry, err)
	}
	retry, err := e.s.CountEvent(ctx, key, "b", 1, 300*time.Millisecond)
	if err != nil || retry <= 0 || retry > 300*time.Millisecond {
		t.Fatalf("second: retry %s, err %v; want refused within the window", retry, err)
	}
	time.Sleep(retry + 20*time.Millisecond) // the wait the script itself named
	if retry, err := e.s.CountEvent(ctx, key, "b", 1, 300*time.Millisecond); err != nil || retry != 0 {
		t.Fatalf("after the named wait: retry %s, err %v; want counted", retry, err)
	}
}

// Concurrent events of one member from many goroutines: exactly limit pass.
func TestCountEventConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e2 := newEnv(t)
	ctx := ctxT(t, 15*time.Second)
	key := e.layout.MemberRate("u1", "casual")
	const limit, tries = 7, 40
	var mu sync.Mutex
	passed := 0
	var wg sync.WaitGroup
	for i := 0; i < tries; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := e.s
			if i%2 == 0 {
				s = e2.s
			}
			retry, err := s.CountEvent(context.WithoutCancel(ctx), key, fmt.Sprintf("c%d", i), limit, time.Minute)
			if err != nil {
				t.Errorf("event %d: %v", i, err)
				return
			}
			if retry == 0 {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if passed != limit {
		t.Fatalf("%d of %d concurrent events passed, want exactly %d", passed, tries, limit)
	}
}

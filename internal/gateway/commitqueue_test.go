package gateway

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The commit queue coalesces requests that queue behind a running group into
// the next group (at most maxEvents), and answers each caller with its own
// items.
func TestCommitQueueGroups(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		maxEvents  int
		queued     int   // requests of one event queued behind the first group
		wantGroups []int // sizes of the groups after the first
	}{
		{name: "all queued share one group", maxEvents: 100, queued: 5, wantGroups: []int{5}},
		{name: "split at max events", maxEvents: 3, queued: 5, wantGroups: []int{3, 2}},
		{name: "one at a time", maxEvents: 1, queued: 3, wantGroups: []int{1, 1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			var mu sync.Mutex
			var sizes []int
			first := true
			q := newCommitQueue(0, c.maxEvents, 1, func(_ context.Context, plans []*plan, _ func()) []BatchItem {
				mu.Lock()
				wait := first
				first = false
				sizes = append(sizes, len(plans))
				mu.Unlock()
				if wait {
					<-release // the first group holds the only slot
				}
				out := make([]BatchItem, len(plans))
				for i, p := range plans {
					out[i].Result = &EventResult{EventID: p.ev.EventID}
				}
				return out
			})
			ctx := context.Background()
			submit := func(id string) error {
				got := q.submit(ctx, []*plan{{ev: Event{EventID: id}}}, nil)
				if len(got) != 1 || got[0].Result == nil || got[0].Result.EventID != id {
					return fmt.Errorf("%s answered %+v", id, got)
				}
				return nil
			}
			var wg sync.WaitGroup
			errs := make(chan error, c.queued+1)
			wg.Go(func() { errs <- submit("first") })
			for {
				mu.Lock()
				started := !first
				mu.Unlock()
				if started {
					break
				}
				runtime.Gosched()
			}
			for i := range c.queued {
				wg.Go(func() { errs <- submit(fmt.Sprintf("q%d", i)) })
			}
			for {
				q.mu.Lock()
				n := q.n
				q.mu.Unlock()
				if n == c.queued {
					break
				}
				runtime.Gosched()
			}
			close(release)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if fmt.Sprint(sizes[1:]) != fmt.Sprint(c.wantGroups) || sizes[0] != 1 {
				t.Errorf("group sizes %v, want [1] then %v", sizes, c.wantGroups)
			}
		})
	}
}

// A caller that gives up is answered unavailable at once; the group still
// runs for the others.
func TestCommitQueueCallerGivesUp(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ran := make(chan int, 1)
	q := newCommitQueue(0, 10, 1, func(_ context.Context, plans []*plan, _ func()) []BatchItem {
		<-release
		ran <- len(plans)
		return make([]BatchItem, len(plans))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := q.submit(ctx, []*plan{{}, {}}, nil)
	if len(got) != 2 || got[0].Err == nil || got[1].Err == nil {
		t.Fatalf("answers %+v, want two errors", got)
	}
	close(release)
	if n := <-ran; n != 2 {
		t.Errorf("group ran with %d plans, want 2", n)
	}
}

// waitOrFail waits for ch, failing the test if it never comes (a guard
// against a hang, far longer than any honest wait: not a timing assertion).
func waitOrFail[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s never happened", what)
		panic("unreachable")
	}
}

// An idle queue does not linger: a lone request commits at once, whatever
// the linger (one hour here).
func TestCommitQueueIdleDoesNotLinger(t *testing.T) {
	t.Parallel()
	q := newCommitQueue(time.Hour, 10, 1, func(_ context.Context, plans []*plan, _ func()) []BatchItem {
		return make([]BatchItem, len(plans))
	})
	done := make(chan []BatchItem, 1)
	go func() { done <- q.submit(context.Background(), []*plan{{}}, nil) }()
	if got := waitOrFail(t, done, "the lone request's commit"); len(got) != 1 {
		t.Errorf("answers %+v, want one", got)
	}
}

// A group frees its slot once its commit ended: the next group commits while
// the first one is still projecting (one slot here).
func TestCommitQueueSlotFreedAfterCommit(t *testing.T) {
	t.Parallel()
	projecting := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	q := newCommitQueue(0, 10, 1, func(_ context.Context, plans []*plan, committed func()) []BatchItem {
		committed()
		if calls.Add(1) == 1 {
			close(projecting)
			<-release // the first group's projection hangs
		}
		return make([]BatchItem, len(plans))
	})
	first := make(chan []BatchItem, 1)
	go func() { first <- q.submit(context.Background(), []*plan{{}}, nil) }()
	waitOrFail(t, projecting, "the first group's projection")
	second := make(chan []BatchItem, 1)
	go func() { second <- q.submit(context.Background(), []*plan{{}, {}}, nil) }()
	if got := waitOrFail(t, second, "the second group, while the first projects"); len(got) != 2 {
		t.Errorf("second answers %+v, want two", got)
	}
	close(release)
	waitOrFail(t, first, "the first group's answer")
}

// A request whose checks are still out waits in the queue while the
// requests after it that are ready commit; once its checks are in, it
// commits in the next group. A queue with nothing ready waits for the
// first check without a group.
func TestCommitQueueWaitsForChecks(t *testing.T) {
	t.Parallel()
	groups := make(chan []string, 10)
	q := newCommitQueue(0, 10, 1, func(_ context.Context, plans []*plan, _ func()) []BatchItem {
		ids := make([]string, len(plans))
		for i, p := range plans {
			ids[i] = p.ev.EventID
		}
		groups <- ids
		return make([]BatchItem, len(plans))
	})
	checked := make(chan struct{})
	slow := make(chan []BatchItem, 1)
	go func() { slow <- q.submit(context.Background(), []*plan{{ev: Event{EventID: "checked"}}}, checked) }()
	// Nothing may commit: no group runs until a ready request comes.
	fast := make(chan []BatchItem, 1)
	for {
		q.mu.Lock()
		queued := len(q.pending)
		q.mu.Unlock()
		if queued == 1 {
			break
		}
		runtime.Gosched()
	}
	go func() { fast <- q.submit(context.Background(), []*plan{{ev: Event{EventID: "plain"}}}, nil) }()
	if got := waitOrFail(t, groups, "the ready request's group"); len(got) != 1 || got[0] != "plain" {
		t.Fatalf("first group %v, want [plain] (the request still checked waits)", got)
	}
	waitOrFail(t, fast, "the ready request's answer")
	select {
	case <-slow:
		t.Fatal("the request still checked was answered before its checks were in")
	default:
	}
	close(checked)
	if got := waitOrFail(t, groups, "the checked request's group"); len(got) != 1 || got[0] != "checked" {
		t.Fatalf("second group %v, want [checked]", got)
	}
	waitOrFail(t, slow, "the checked request's answer")
}

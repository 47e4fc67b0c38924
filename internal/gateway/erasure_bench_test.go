package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkEraseMember: erasing a member on 1 000 boards (a 4-shard national
// board and 999 class boards of 2 shards, each board also holding 3 other
// members), Redis-only mode, on the test cluster. The yardstick, measured in
// the same run: write-ms, the one batch of 999 events that put the member
// on those 1 000 boards. Needs RANKGATE_TEST_REDIS_CLUSTER.
//
//	go test ./internal/gateway -run '^$' -bench EraseMember -benchtime 5x
func BenchmarkEraseMember(b *testing.B) {
	svc := newClusterService(b, eraseFamilies)
	ctx := context.Background()
	const classes = 999
	batch := func(user string, n int) []Event {
		evs := make([]Event, classes)
		for c := range evs {
			evs[c] = sumEv(fmt.Sprintf("%s-%d", user, c), "f", user, int64(1+(c+n)%9), map[string]string{"class": fmt.Sprintf("c%03d", c)})
		}
		return evs
	}
	apply := func(evs []Event) {
		items, err := svc.ApplyBatch(ctx, evs)
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range items {
			if it.Err != nil {
				b.Fatal(it.Err)
			}
		}
	}
	for i := range 3 {
		apply(batch(fmt.Sprintf("other%d", i), i))
	}
	var write, erase time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		user := fmt.Sprintf("victim%d", n)
		evs := batch(user, n)
		t0 := time.Now()
		apply(evs)
		write += time.Since(t0)
		b.StartTimer()
		t1 := time.Now()
		res, err := svc.EraseMember(ctx, user, eraser)
		erase += time.Since(t1)
		if err != nil || res.Boards != classes+1 {
			b.Fatalf("erasure: %+v %v, want %d boards", res, err, classes+1)
		}
		n++
	}
	b.ReportMetric(float64(erase.Milliseconds())/float64(n), "erase-ms")
	b.ReportMetric(float64(write.Milliseconds())/float64(n), "write-ms")
	b.ReportMetric(float64(erase)/float64(write), "erase/write")
}

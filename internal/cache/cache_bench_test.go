package cache

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func benchCache(b *testing.B) *Cache[[]int] {
	b.Helper()
	c, err := New[[]int](Options{Size: 10000, MaxTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchValue = []int{1, 2, 3}

func benchLoad(context.Context) ([]int, bool, error) { return benchValue, true, nil }

// BenchmarkGetHit measures parallel hits on one hot key.
func BenchmarkGetHit(b *testing.B) {
	c := benchCache(b)
	ctx := context.Background()
	if _, _, err := c.Get(ctx, "top", "board:1|top|100", time.Hour, benchLoad); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, res, err := c.Get(ctx, "top", "board:1|top|100", time.Hour, benchLoad); err != nil || !res.Hit {
				b.Error("want hit")
				return
			}
		}
	})
}

// BenchmarkGetHitManyKeys measures parallel hits spread over 1024 keys.
func BenchmarkGetHitManyKeys(b *testing.B) {
	c := benchCache(b)
	ctx := context.Background()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "board:" + strconv.Itoa(i) + "|top|100"
		if _, _, err := c.Get(ctx, "top", keys[i], time.Hour, benchLoad); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i = (i + 7) & (len(keys) - 1)
			if _, res, err := c.Get(ctx, "top", keys[i], time.Hour, benchLoad); err != nil || !res.Hit {
				b.Error("want hit")
				return
			}
		}
	})
}

// BenchmarkGetAtRefresh: parallel reads of one hot key whose 10 ms entry
// keeps expiring, with a load that takes 200 µs (a fan-out in miniature).
// Without ServeStale every expiry makes the callers of that moment wait for
// the load; with it they are served the previous value while one refresh
// runs. Reports the per-read p50, p99, p99.9 and maximum, and how many reads
// per million waited for a load.
func BenchmarkGetAtRefresh(b *testing.B) {
	for _, serveStale := range []bool{false, true} {
		b.Run(fmt.Sprintf("serve_stale=%v", serveStale), func(b *testing.B) {
			c, err := New[[]int](Options{Size: 16, MaxTTL: time.Second, ServeStale: serveStale})
			if err != nil {
				b.Fatal(err)
			}
			load := func(context.Context) ([]int, bool, error) {
				time.Sleep(200 * time.Microsecond)
				return benchValue, true, nil
			}
			ctx := context.Background()
			var mu sync.Mutex
			var lat []time.Duration
			var waited atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				own := make([]time.Duration, 0, 1024)
				for pb.Next() {
					t0 := time.Now()
					_, res, err := c.Get(ctx, "top", "board:1|top|100", 10*time.Millisecond, load)
					if err != nil {
						b.Error(err)
						return
					}
					if !res.Hit {
						waited.Add(1) // ran or joined a load
					}
					own = append(own, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, own...)
				mu.Unlock()
			})
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
				b.ReportMetric(float64(lat[len(lat)*999/1000].Nanoseconds()), "p99.9-ns")
				b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
				b.ReportMetric(float64(waited.Load())/float64(len(lat))*1e6, "waits/1e6reads")
			}
		})
	}
}

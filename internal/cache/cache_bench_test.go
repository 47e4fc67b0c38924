package cache

import (
	"context"
	"strconv"
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

package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/monitor"
	"github.com/rankgate/rankgate/internal/store"
)

// commandStats runs n calls of each measurement, one after another, with the
// masters' INFO commandstats reset before and read after, and prints per
// call: the commands Redis ran (by name) and the microseconds it spent in
// them (summed over the masters). Other traffic on the same cluster counts
// too: run it on the bench cluster alone.
func commandStats(ctx context.Context, rc redis.UniversalClient, ms []measurement, n int) error {
	fmt.Println()
	fmt.Printf("| per call, %d calls each (INFO commandstats summed over the masters) | commands | Redis µs |\n", n)
	fmt.Println("| --- | --- | --- |")
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range ms {
		if err := store.ForEachMaster(ctx, rc, func(ctx context.Context, c *redis.Client) error { return c.ConfigResetStat(ctx).Err() }); err != nil {
			return err
		}
		for range n {
			if err := m.do(ctx, r); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		var mu sync.Mutex
		sum := map[string]monitor.CommandStat{}
		err := store.ForEachMaster(ctx, rc, func(ctx context.Context, c *redis.Client) error {
			info, err := c.InfoMap(ctx, "commandstats").Result()
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for name, st := range monitor.ParseCommandStats(info["Commandstats"]) {
				t := sum[name]
				t.Calls += st.Calls
				t.Usec += st.Usec
				sum[name] = t
			}
			return nil
		})
		if err != nil {
			return err
		}
		// INFO itself (and CONFIG RESETSTAT, counted after the reset on some
		// versions) is the measurement's own traffic.
		delete(sum, "info")
		delete(sum, "config|resetstat")
		var parts []string
		var usec int64
		for _, name := range slices.Sorted(maps.Keys(sum)) {
			st := sum[name]
			usec += st.Usec
			parts = append(parts, fmt.Sprintf("%.1f %s", float64(st.Calls)/float64(n), name))
		}
		fmt.Printf("| %s | %s | %.1f |\n", m.name, strings.Join(parts, ", "), float64(usec)/float64(n))
	}
	return nil
}

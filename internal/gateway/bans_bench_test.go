package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/shard"
)

// bannedBackend holds n bans at version 1.
type bannedBackend struct {
	fakeBackend
	all map[string]string
}

func (b *bannedBackend) BanVersion(context.Context, shard.BanKeys) (int64, error) { return 1, nil }

func (b *bannedBackend) Bans(context.Context, shard.BanKeys) (map[string]string, int64, error) {
	return b.all, 1, nil
}

// BenchmarkBanCheck: what the ban check adds to a batch of 500 events, side
// by side with what planning the same batch costs (the yardstick: the work
// the write path does anyway before any Redis call). 10 000 members banned;
// the copy is fresh (the poll every banPoll is one GET, not counted here).
func BenchmarkBanCheck(b *testing.B) {
	cfg, err := config.Parse([]byte(fakeConfig))
	if err != nil {
		b.Fatal(err)
	}
	be := &bannedBackend{all: map[string]string{}}
	for i := range 10000 {
		js, _ := json.Marshal(Ban{User: fmt.Sprintf("x%d", i), Families: []string{"f"}})
		be.all[fmt.Sprintf("x%d", i)] = string(js)
	}
	svc, err := New(Options{Config: cfg, Backend: be})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]Event, 500)
	for i := range evs {
		evs[i] = Event{EventID: fmt.Sprintf("e%d", i), Family: "f", User: fmt.Sprintf("u%d", i), Delta: ptr(int64(1))}
	}
	now := time.Now()
	plans := make([]plan, len(evs))
	ctx := context.Background()
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			for i := range evs {
				plans[i] = svc.planEvent(evs[i], now)
			}
		}
	})
	b.Run("ban_check", func(b *testing.B) {
		for b.Loop() {
			if err := svc.refuseBanned(ctx, plans); err != nil {
				b.Fatal(err)
			}
		}
	})
}

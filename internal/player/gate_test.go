package player_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// fakeRate records the counts asked and answers retry (or err).
type fakeRate struct {
	keys  []string
	retry time.Duration
	err   error
}

func (f *fakeRate) CountEvent(_ context.Context, key, _ string, limit int, window time.Duration) (time.Duration, error) {
	if limit != 30 || window != time.Minute {
		return 0, errors.New("wrong limit or window")
	}
	f.keys = append(f.keys, key)
	return f.retry, f.err
}

func TestGateCheckEvent(t *testing.T) {
	t.Parallel()
	i64 := func(v int64) *int64 { return &v }
	families := func(f string) (player.ClientWrites, bool) {
		if f == "casual" {
			return player.ClientWrites{MaxDelta: 100, MaxEventsPerMinute: 30}, true
		}
		return player.ClientWrites{}, false
	}
	cases := []struct {
		name    string
		w       player.Write
		rate    fakeRate
		code    rank.Code
		field   string
		limited bool
		counted bool
	}{
		{name: "own event within bounds", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Delta: i64(100)}, counted: true},
		{name: "negative delta within bounds", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Delta: i64(-100)}, counted: true},
		{name: "another member", w: player.Write{Family: "casual", User: "u2", EventID: "e1", Delta: i64(1)}, code: rank.CodeForbidden, field: "user"},
		{name: "family without client_writes", w: player.Write{Family: "learning", User: "u1", EventID: "e1", Delta: i64(1)}, code: rank.CodeForbidden, field: "family"},
		{name: "reversal", w: player.Write{Family: "casual", User: "u1", EventID: "e2", Reverses: "e1"}, code: rank.CodeForbidden, field: "reverses"},
		{name: "delta over max_delta", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Delta: i64(101)}, code: rank.CodeOutOfRange, field: "delta"},
		{name: "delta under -max_delta", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Delta: i64(-101)}, code: rank.CodeOutOfRange, field: "delta"},
		{name: "value over max_delta", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Value: i64(1000)}, code: rank.CodeOutOfRange, field: "value"},
		{name: "over the rate", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Delta: i64(1)}, rate: fakeRate{retry: 1500 * time.Millisecond}, limited: true, counted: true},
		{name: "counter down", w: player.Write{Family: "casual", User: "u1", EventID: "e1", Delta: i64(1)}, rate: fakeRate{err: rank.Unavailable(nil, "down")}, code: rank.CodeUnavailable, counted: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rate := tc.rate
			g, err := player.NewGate(families, &rate, shard.Layout{Prefix: "rk"})
			if err != nil {
				t.Fatal(err)
			}
			err = g.CheckEvent(context.Background(), "u1", tc.w)
			var rl *player.RateLimitedError
			switch {
			case tc.limited:
				if !errors.As(err, &rl) || player.RetryAfterSeconds(rl.RetryAfter) != 2 {
					t.Fatalf("CheckEvent = %v, want a rate limit with Retry-After 2s", err)
				}
			case tc.code != "":
				var re *rank.Error
				if !errors.As(err, &re) || re.Code != tc.code || re.Field != tc.field {
					t.Fatalf("CheckEvent = %#v, want code %s field %q", err, tc.code, tc.field)
				}
			case err != nil:
				t.Fatalf("CheckEvent: %v", err)
			}
			if tc.counted != (len(rate.keys) == 1) {
				t.Fatalf("counted %v, want counted %v", rate.keys, tc.counted)
			}
			if tc.counted && rate.keys[0] != "rk:{p:u1}:rate:casual" {
				t.Errorf("counter key %q, want the member's own tag", rate.keys[0])
			}
		})
	}
}

package store_test

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/store"
)

func TestPeriodKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("EnsurePeriod is first-write-wins", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		pk := e.layout.Period("learning", "2026-W34")
		before, err := e.s.Period(ctx, pk)
		if err != nil || before.Exists {
			t.Fatalf("Period before any write = %+v, %v; want not existing", before, err)
		}
		steps := []struct {
			name   string
			shards map[string]int
			rules  string
			want   map[string]int
		}{
			{"first write records 16", map[string]int{"national": 16}, "r1", map[string]int{"national": 16}},
			{"a later config of 8 does not change it", map[string]int{"national": 8}, "r2", map[string]int{"national": 16}},
			{"a new dimension type is recorded once", map[string]int{"national": 4, "province": 2}, "r3", map[string]int{"national": 16, "province": 2}},
			{"and then kept", map[string]int{"province": 9}, "r4", map[string]int{"national": 16, "province": 2}},
		}
		for i, st := range steps {
			got, err := e.s.EnsurePeriod(ctx, pk, st.shards, st.rules, int64(1000+i))
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if !got.Exists || got.State != "open" || got.Rules != "r1" || !maps.Equal(got.Shards, st.want) {
				t.Errorf("%s: %+v, want open, rules r1, shards %v", st.name, got, st.want)
			}
		}
		got, err := e.s.Period(ctx, pk)
		if err != nil || !maps.Equal(got.Shards, map[string]int{"national": 16, "province": 2}) || got.Rules != "r1" {
			t.Errorf("Period = %+v, %v", got, err)
		}
		if created, _ := e.c.HGet(ctx, pk.Meta, "created").Result(); created != "1000" {
			t.Errorf("created = %q, want the first write's 1000", created)
		}
	})

	t.Run("TakeSeq returns consecutive ranges", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		pk := e.layout.Period("learning", "2026-W35")
		next := int64(1)
		for _, n := range []int64{1, 5, 3, 1, 100} {
			first, err := e.s.TakeSeq(ctx, pk, n)
			if err != nil {
				t.Fatal(err)
			}
			if first != next {
				t.Errorf("TakeSeq(%d) = %d, want %d", n, first, next)
			}
			next += n
		}
		// Concurrent takers get disjoint ranges covering every number once.
		const takers, per = 20, 3
		firsts := make([]int64, takers)
		var wg sync.WaitGroup
		errs := make(chan error, takers)
		for i := range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := e.s.TakeSeq(ctx, pk, per)
				if err != nil {
					errs <- err
				}
				firsts[i] = f
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		slices.Sort(firsts)
		for i, f := range firsts {
			if want := next + int64(i*per); f != want {
				t.Fatalf("concurrent ranges start at %v, want every %d from %d", firsts, per, next)
			}
		}
	})

	t.Run("RecordLate and LateEvents round-trip", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		pk := e.layout.Period("learning", "2026-W36")
		if got, err := e.s.LateEvents(ctx, pk, 10); err != nil || len(got) != 0 {
			t.Fatalf("LateEvents on an empty period = %v, %v", got, err)
		}
		at := []time.Time{time.UnixMilli(1111).UTC(), time.UnixMilli(2222).UTC(), time.UnixMilli(3333).UTC()}
		in := []store.LateEvent{
			{Reason: "frozen", Event: json.RawMessage(`{"event_id":"e1","member":"u1","delta":5}`), ReceivedAt: at[0]},
			{Reason: "after_grace", Event: json.RawMessage(`{"event_id":"e2","member":"u2","delta":-3}`), ReceivedAt: at[1]},
			{Reason: "frozen", Event: json.RawMessage(`{"event_id":"e3"}`), ReceivedAt: at[2]},
		}
		var ids []string
		for _, le := range in {
			id, err := e.s.RecordLate(ctx, pk, le)
			if err != nil || id == "" {
				t.Fatalf("RecordLate: %q, %v", id, err)
			}
			ids = append(ids, id)
		}
		got, err := e.s.LateEvents(ctx, pk, 10)
		if err != nil || len(got) != len(in) {
			t.Fatalf("LateEvents = %v, %v; want %d entries", got, err, len(in))
		}
		for i, m := range got {
			if m.ID != ids[i] || m.Reason != in[i].Reason || string(m.Event) != string(in[i].Event) || !m.ReceivedAt.Equal(at[i]) {
				t.Errorf("entry %d = %+v, want id %s reason %s event %s at %v", i, m, ids[i], in[i].Reason, in[i].Event, at[i])
			}
		}
		if got, err := e.s.LateEvents(ctx, pk, 2); err != nil || len(got) != 2 || got[1].ID != ids[1] {
			t.Errorf("LateEvents(count 2) = %v, %v", got, err)
		}
		if _, err := e.s.RecordLate(ctx, pk, store.LateEvent{Event: json.RawMessage(`{"event_id":`)}); err == nil {
			t.Errorf("RecordLate of an event that is not JSON: nil error")
		}
		// A damaged entry (written by hand, not by RecordLate) is an error naming it.
		bad := e.layout.Period("learning", "2026-W35")
		id, err := e.cc.XAdd(ctx, &redis.XAddArgs{Stream: bad.Late, Values: []any{"reason", "frozen", "event", "{", "received_ms", "x"}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.LateEvents(ctx, bad, 10); err == nil || !strings.Contains(err.Error(), id) {
			t.Errorf("LateEvents over a damaged entry = %v, want an error naming %s", err, id)
		}
	})

	t.Run("RegisterBoards and Boards", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		pk := e.layout.Period("learning", "2026-W37")
		for _, dims := range [][]string{{"national", "province:zhejiang"}, {"province:zhejiang", "class:c42"}} {
			if err := e.s.RegisterBoards(ctx, pk, dims); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.s.Boards(ctx, pk)
		sort.Strings(got)
		if err != nil || !slices.Equal(got, []string{"class:c42", "national", "province:zhejiang"}) {
			t.Errorf("Boards = %v, %v", got, err)
		}
	})

	t.Run("PutProfile and Profiles", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		k1, k2, k3, missing := e.layout.Profile("u1"), e.layout.Profile("u2"), e.layout.Profile("u3"), e.layout.Profile("nobody")
		puts := []struct {
			key    string
			fields map[string]string
		}{
			{k1, map[string]string{"name": "Ann", "avatar": "https://x/a.png"}},
			{k2, map[string]string{"name": "Bob", "city": "Hangzhou"}},
			{k2, map[string]string{"nick": "B"}}, // replaces, not merges
			{k3, map[string]string{"name": "Cy"}},
			{k3, nil}, // an empty profile deletes it
		}
		for _, p := range puts {
			if err := e.s.PutProfile(ctx, p.key, p.fields); err != nil {
				t.Fatalf("PutProfile %s: %v", p.key, err)
			}
		}
		got, err := e.s.Profiles(ctx, []string{k1, missing, k2, k3}, false)
		if err != nil {
			t.Fatal(err)
		}
		want := []map[string]string{{"name": "Ann", "avatar": "https://x/a.png"}, nil, {"nick": "B"}, nil}
		if len(got) != len(want) {
			t.Fatalf("Profiles = %v, want %v", got, want)
		}
		for i := range want {
			if (got[i] == nil) != (want[i] == nil) || !maps.Equal(got[i], want[i]) {
				t.Errorf("profile %d = %#v, want %#v", i, got[i], want[i])
			}
		}
		if got, err := e.s.Profiles(ctx, nil, false); err != nil || len(got) != 0 {
			t.Errorf("Profiles(nil) = %v, %v", got, err)
		}
	})
}

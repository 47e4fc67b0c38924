package gateway

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

const derivedFamilies = `  base:
    period: all
    key_group: season
    order: %[1]s
    max_points: 1000
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
  bonus:
    period: all
    key_group: season
    order: %[1]s
    max_points: 1000
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
  final:
    source: derived
    period: all
    key_group: season
    order: %[1]s
    rank: competition
    max_points: 3000
    derived_from:
      inputs:
        - {family: base}
        - {family: bonus, weight: 2}
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
`

// final = base + 2 × bonus, computed shard by shard in-slot, equals the
// same sum computed member by member, on every board; freeze computes it one
// last time and then it no longer changes.
func TestDerivedBoards(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"desc", "asc"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			svc := newClusterService(t, fmt.Sprintf(derivedFamilies, order))
			ctx := context.Background()
			want := map[string]map[string]int64{"national": {}, "province:zj": {}, "province:gd": {}}
			for i := 0; i < 80; i++ {
				u := fmt.Sprintf("u%02d", i%30)
				prov := []string{"zj", "gd"}[i%30%2]
				fam, w := "base", int64(1)
				if i%3 == 0 {
					fam, w = "bonus", 2
				}
				d := int64(1 + i%5)
				if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: fam, User: u, Delta: ptr(d),
					Dims: map[string]string{"province": prov}}); err != nil {
					t.Fatal(err)
				}
				want["national"][u] += w * d
				want["province:"+prov][u] += w * d
			}
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "x", Family: "final", User: "u1", Delta: ptr(int64(1))}); rank.CodeOf(err) != rank.CodeWrongSource {
				t.Fatalf("event to a derived family: %v", err)
			}
			rep, err := svc.Derive(ctx, "final", "all")
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Boards) != 3 {
				t.Fatalf("derived boards: %+v", rep.Boards)
			}
			for dim, sums := range want {
				ref := newRef(order == "asc", false, true)
				for u, p := range sums {
					ref.members[u] = &refMember{points: p}
				}
				exp := ref.sorted()
				page, err := svc.Top(ctx, BoardRef{Family: "final", Period: "all", Dimension: dim}, 100, ReadOptions{Consistency: ConsistencyPrimary})
				if err != nil {
					t.Fatal(err)
				}
				sameEntries(t, "final "+dim, page.Entries, exp)
			}
			// Every derived shard sits in the slot of its inputs' shards.
			f, b, fb := svc.families["final"], svc.families["base"], svc.families["bonus"]
			for i := 0; i < 4; i++ {
				sl := shard.Slot(svc.layout.ZKey(f.board("all", shard.National, ""), i, 4))
				if shard.Slot(svc.layout.ZKey(b.board("all", shard.National, ""), i, 4)) != sl ||
					shard.Slot(svc.layout.ZKey(fb.board("all", shard.National, ""), i, 4)) != sl {
					t.Fatalf("shard %d of final is not in its inputs' slot", i)
				}
			}
			// More input after the last derive shows on the next derive only;
			// freeze derives once more, then the derived board is final.
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "late", Family: "bonus", User: "u00", Delta: ptr(int64(100))}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Freeze(ctx, "final", "all"); err != nil {
				t.Fatal(err)
			}
			ms, err := svc.Member(ctx, BoardRef{Family: "final", Period: "all", Dimension: "national"}, "u00", ReadOptions{})
			if err != nil || ms.Points != want["national"]["u00"]+200 {
				t.Fatalf("after freeze u00 = %+v %v, want %d", ms, err, want["national"]["u00"]+200)
			}
			if _, err := svc.Derive(ctx, "final", "all"); rank.CodeOf(err) != rank.CodePeriodClosed {
				t.Fatalf("derive after freeze: %v", err)
			}
			if _, err := svc.Derive(ctx, "base", "all"); rank.CodeOf(err) != rank.CodeWrongSource {
				t.Fatalf("derive of an events family: %v", err)
			}
			list, err := svc.Boards(ctx, "final", "all")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, b := range list.Boards {
				names = append(names, b.Dimension)
			}
			sort.Strings(names)
			if fmt.Sprint(names) != "[national province:gd province:zj]" {
				t.Fatalf("derived board listing: %v", names)
			}
		})
	}
}

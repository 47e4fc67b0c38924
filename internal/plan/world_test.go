package plan

import (
	"math"
	"strconv"
	"testing"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/workload"
)

func near(a, b, eps float64) bool { return math.Abs(a-b) <= eps }

func TestWorldConservesMembersAndShares(t *testing.T) {
	sc := DefaultScenario()
	sc.Members, sc.Provinces, sc.Classes = 20000, 8, 50
	w, err := NewWorld(&sc, map[string]int{workload.BoardNational: 16, workload.BoardProvince: 2, workload.BoardClass: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Boards) != 1+8+50 {
		t.Fatalf("%d boards, want 59", len(w.Boards))
	}
	perType := map[string]int64{}
	eventShare := map[string]float64{}
	for _, b := range w.Boards {
		var members int64
		var es, rs float64
		for i := range b.Shards {
			members += b.ShardMembers[i]
			es += b.EventShare[i]
			rs += b.MemberReadShare[i]
		}
		if members != b.Members {
			t.Errorf("%s: shards hold %d members, board %d", b.Dimension(), members, b.Members)
		}
		if b.Members > 0 && !near(rs, 1, 1e-9) {
			t.Errorf("%s: member read shares sum to %g, want 1", b.Dimension(), rs)
		}
		perType[b.DimType] += b.Members
		eventShare[b.DimType] += es
	}
	for _, typ := range []string{workload.BoardNational, workload.BoardProvince, workload.BoardClass} {
		if perType[typ] != int64(sc.Members) {
			t.Errorf("%s boards hold %d members, want %d: every member is on one board of each type", typ, perType[typ], sc.Members)
		}
		if !near(eventShare[typ], 1, 1e-9) {
			t.Errorf("%s boards take %g of the events, want 1", typ, eventShare[typ])
		}
	}
	// Board skew 1: p0 is the biggest province, by about 1/H(8) of the members.
	if p0, p7 := w.Boards[1].Members, w.Boards[8].Members; p0 <= p7 || !near(float64(p0)/float64(sc.Members), 1/workload.Harmonic(8, 1), 0.02) {
		t.Errorf("p0 %d, p7 %d members: want p0 ≈ %.3f of %d", p0, p7, 1/workload.Harmonic(8, 1), sc.Members)
	}
	// Member skew: lt0 is the hottest member, on its national shard.
	hot := shard.Of(sc.MemberPrefix+"0", 16)
	if want := 1 / workload.Harmonic(sc.Members, sc.MemberSkew); !near(w.Boards[0].HotMemberEventShare, want, 1e-12) {
		t.Errorf("hottest member share %g, want %g", w.Boards[0].HotMemberEventShare, want)
	}
	for i, s := range w.Boards[0].EventShare {
		if i != hot && s >= w.Boards[0].EventShare[hot] {
			t.Errorf("national shard %d takes %g of the events, more than lt0's shard %d (%g)", i, s, hot, w.Boards[0].EventShare[hot])
		}
	}
}

// The shard of each member follows internal/shard (FNV-1a), as the gateway
// places it.
func TestWorldShardsFollowTheGateway(t *testing.T) {
	sc := DefaultScenario()
	sc.Members, sc.Provinces, sc.Classes, sc.MemberSkew = 500, 0, 0, 0
	w, err := NewWorld(&sc, map[string]int{workload.BoardNational: 7})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, 7)
	for i := range 500 {
		want[shard.Of(sc.MemberPrefix+strconv.Itoa(i), 7)]++
	}
	for i := range want {
		if w.Boards[0].ShardMembers[i] != want[i] {
			t.Errorf("shard %d: %d members, want %d", i, w.Boards[0].ShardMembers[i], want[i])
		}
		// No skew: events spread like members.
		if !near(w.Boards[0].EventShare[i], float64(want[i])/500, 1e-12) {
			t.Errorf("shard %d: event share %g, want %g", i, w.Boards[0].EventShare[i], float64(want[i])/500)
		}
	}
}

func TestWorldNeedsTheDimensions(t *testing.T) {
	sc := DefaultScenario()
	sc.Members = 10
	if _, err := NewWorld(&sc, map[string]int{workload.BoardNational: 1, workload.BoardProvince: 1}); err == nil {
		t.Error("classes > 0 without a class dimension must fail")
	}
	if _, err := NewWorld(&sc, map[string]int{}); err == nil {
		t.Error("no national shards must fail")
	}
}

func TestReadBoards(t *testing.T) {
	sc := DefaultScenario()
	sc.Members, sc.Provinces, sc.Classes, sc.BoardSkew = 50, 4, 200, 0
	w, err := NewWorld(&sc, map[string]int{workload.BoardNational: 2, workload.BoardProvince: 1, workload.BoardClass: 1})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(q []float64) (s float64) {
		for _, x := range q {
			s += x
		}
		return s
	}
	for _, tc := range []struct {
		sel        string
		memberRead bool
		check      func(q []float64) bool
	}{
		{workload.BoardNational, false, func(q []float64) bool { return q[0] == 1 }},
		{workload.BoardAny, false, func(q []float64) bool { return near(q[0], 1.0/205, 1e-12) && near(q[204], 1.0/205, 1e-12) }},
		{workload.BoardProvince, false, func(q []float64) bool { return q[0] == 0 && near(q[1], 0.25, 1e-12) }},
		// 200 classes for 50 members: at least 150 are empty, and member
		// reads of an empty board go to national.
		{workload.BoardClass, true, func(q []float64) bool { return q[0] >= 150.0/200-1e-9 }},
		{workload.BoardClass, false, func(q []float64) bool { return q[0] == 0 }},
	} {
		q := w.ReadBoards(tc.sel, tc.memberRead)
		if !near(sum(q), 1, 1e-9) || !tc.check(q) {
			t.Errorf("%s (member read %v): national %g, sum %g", tc.sel, tc.memberRead, q[0], sum(q))
		}
	}
}

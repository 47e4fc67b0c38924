package plan

import (
	"fmt"
	"math"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/workload"
)

// The world of a scenario is the load tool's (loadtest/ops.go NewWorld; both
// build it from internal/workload): member i is MemberPrefix+i; its boards
// are national plus, per dimension (province, then class), the value
// workload.Dim.ValueOf gives it (a Zipf over the values, exponent
// board_skew, from a fixed hash of i). Events
// pick members by a Zipf over all members (member_skew, member 0 hottest);
// member reads of a dimension board pick its members (in index order) by a
// Zipf over that board. The planner computes the same shapes exactly instead
// of sampling them, so that a plan and a load-test run of one scenario agree.

// WorldBoard is one board of the world with what lands on each of its
// shards.
type WorldBoard struct {
	DimType string // national, province, class
	Value   string // "" for national
	Shards  int
	Members int64
	// ShardMembers[i] is the number of members on shard i.
	ShardMembers []int64
	// EventShare[i] is the share of all events that touch shard i (over a
	// board's shards it sums to the board's share of events).
	EventShare []float64
	// MemberReadShare[i] is the share of this board's member reads (member,
	// around, lookup) whose member lives on shard i; it sums to 1.
	MemberReadShare []float64
	// HotMemberEventShare is the largest share of all events one member of
	// this board sends.
	HotMemberEventShare float64
}

// Dimension returns "national" or "type:value".
func (b *WorldBoard) Dimension() string {
	if b.Value == "" {
		return workload.BoardNational
	}
	return b.DimType + ":" + b.Value
}

// World is the boards of a scenario, national first, then provinces, then
// classes (the load tool's board order, which its "any" selector uses).
type World struct {
	Boards []WorldBoard
	// first board index of each dimension type
	first map[string]int
	// tables holds the Zipf over the values of each dimension type (hot
	// boards first), any the one over all boards: the load tool's read
	// selectors.
	tables map[string]*workload.ZipfTable
	any    *workload.ZipfTable
}

// NewWorld builds the world of a scenario for the given shard counts per
// dimension type ("national", "province", "class").
func NewWorld(sc *Scenario, shards map[string]int) (*World, error) {
	w := &World{first: map[string]int{}, tables: map[string]*workload.ZipfTable{}}
	ns := shards[workload.BoardNational]
	if ns < 1 {
		return nil, fmt.Errorf("world: national needs ≥ 1 shard, got %d", ns)
	}
	w.Boards = append(w.Boards, WorldBoard{DimType: workload.BoardNational, Shards: ns})
	w.first[workload.BoardNational] = 0
	dims, err := sc.Dims()
	if err != nil {
		return nil, err
	}
	for _, d := range dims {
		s := shards[d.Type]
		if s < 1 {
			return nil, fmt.Errorf("world: the scenario has %d %s boards but the family has no %s dimension", d.N, d.Type, d.Type)
		}
		w.first[d.Type], w.tables[d.Type] = len(w.Boards), d.Table
		for v := range d.N {
			w.Boards = append(w.Boards, WorldBoard{DimType: d.Type, Value: d.ValueName(v), Shards: s})
		}
	}
	if w.any, err = workload.NewZipfTable(len(w.Boards), sc.BoardSkew); err != nil {
		return nil, err
	}
	for i := range w.Boards {
		b := &w.Boards[i]
		b.ShardMembers = make([]int64, b.Shards)
		b.EventShare = make([]float64, b.Shards)
		b.MemberReadShare = make([]float64, b.Shards)
	}
	n := sc.Members
	boardOf := func(di, i int) int { d := &dims[di]; return w.first[d.Type] + d.ValueOf(i) }
	// Pass 1: members per dimension board, for each board's Zipf normaliser.
	for i := range n {
		for di := range dims {
			w.Boards[boardOf(di, i)].Members++
		}
	}
	w.Boards[0].Members = int64(n)
	norm := make([]float64, len(w.Boards))
	for i := range w.Boards {
		if m := w.Boards[i].Members; m > 0 {
			norm[i] = workload.Harmonic(int(m), sc.MemberSkew)
		}
	}
	// Pass 2: shard of every member on each of its boards; event and read
	// shares.
	rankIn := make([]int, len(w.Boards)) // next rank within each dimension board
	buf := make([]byte, 0, len(sc.MemberPrefix)+12)
	for i := range n {
		buf = sc.AppendMemberName(buf[:0], i)
		name := string(buf)
		pe := math.Pow(float64(i+1), -sc.MemberSkew) / norm[0]
		add := func(bi int, readShare float64) {
			b := &w.Boards[bi]
			s := shard.Of(name, b.Shards)
			b.ShardMembers[s]++
			b.EventShare[s] += pe
			b.MemberReadShare[s] += readShare
			if pe > b.HotMemberEventShare {
				b.HotMemberEventShare = pe
			}
		}
		add(0, pe)
		for di := range dims {
			bi := boardOf(di, i)
			r := rankIn[bi]
			rankIn[bi]++
			add(bi, math.Pow(float64(r+1), -sc.MemberSkew)/norm[bi])
		}
	}
	return w, nil
}

// ReadBoards returns, for a read selector, the probability of each board.
// memberRead moves the share of boards without members to national, as the
// load tool does for member, around and lookup reads.
func (w *World) ReadBoards(sel string, memberRead bool) []float64 {
	q := make([]float64, len(w.Boards))
	switch sel {
	case workload.BoardNational:
		q[0] = 1
	case workload.BoardAny:
		for i := range q {
			q[i] = w.any.P(i)
		}
	default:
		t, ok := w.tables[sel]
		if !ok {
			q[0] = 1
			break
		}
		for k := range t.N() {
			q[w.first[sel]+k] = t.P(k)
		}
	}
	if memberRead {
		for i := 1; i < len(q); i++ {
			if w.Boards[i].Members == 0 && q[i] > 0 {
				q[0] += q[i]
				q[i] = 0
			}
		}
	}
	return q
}

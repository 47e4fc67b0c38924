package plan

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/rankgate/rankgate/internal/shard"
)

// The world of a scenario is the load tool's (loadtest/ops.go NewWorld,
// loadtest/zipf.go): member i is MemberPrefix+i; its boards are national
// plus, per dimension (province, then class), the value drawn from a Zipf
// table over the values (exponent board_skew) with a fixed hash of i. Events
// pick members by a Zipf over all members (member_skew, member 0 hottest);
// member reads of a dimension board pick its members (in index order) by a
// Zipf over that board. The planner computes the same shapes exactly instead
// of sampling them, so that a plan and a load-test run of one scenario agree.

// zipfTable is a Zipf distribution over n ranks as a CDF (loadtest ZipfTable).
type zipfTable struct{ cdf []float64 }

func newZipfTable(n int, s float64) zipfTable {
	cdf := make([]float64, n)
	var sum float64
	for k := range n {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	cdf[n-1] = 1
	return zipfTable{cdf: cdf}
}

// p returns the probability of rank k.
func (t zipfTable) p(k int) float64 {
	if k == 0 {
		return t.cdf[0]
	}
	return t.cdf[k] - t.cdf[k-1]
}

// quantile maps u ∈ [0, 1) to the rank whose CDF interval holds it.
func (t zipfTable) quantile(u float64) int {
	k := sort.SearchFloat64s(t.cdf, u)
	if k < len(t.cdf) && t.cdf[k] == u {
		k++
	}
	return min(k, len(t.cdf)-1)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitHash is the load tool's member → dimension value hash.
func unitHash(i int, salt uint64) float64 {
	return float64(splitmix64(uint64(i)^salt*0x9e3779b97f4a7c15)>>11) / (1 << 53)
}

// harmonic returns Σ_{k=1..n} k^-s, the Zipf normaliser.
func harmonic(n int, s float64) float64 {
	if s == 0 {
		return float64(n)
	}
	var h float64
	for k := n; k >= 1; k-- { // small terms first
		h += math.Pow(float64(k), -s)
	}
	return h
}

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
		return BoardNational
	}
	return b.DimType + ":" + b.Value
}

// World is the boards of a scenario, national first, then provinces, then
// classes (the load tool's board order, which its "any" selector uses).
type World struct {
	Boards []WorldBoard
	// first board index of each dimension type
	first map[string]int
	count map[string]int
}

// NewWorld builds the world of a scenario for the given shard counts per
// dimension type ("national", "province", "class").
func NewWorld(sc *Scenario, shards map[string]int) (*World, error) {
	type dimSpec struct {
		typ, short string
		n          int
		table      zipfTable
		salt       uint64
	}
	var dims []dimSpec
	w := &World{first: map[string]int{}, count: map[string]int{}}
	ns := shards[BoardNational]
	if ns < 1 {
		return nil, fmt.Errorf("world: national needs ≥ 1 shard, got %d", ns)
	}
	w.Boards = append(w.Boards, WorldBoard{DimType: BoardNational, Shards: ns})
	w.first[BoardNational], w.count[BoardNational] = 0, 1
	for _, d := range []struct {
		typ, short string
		n          int
	}{{BoardProvince, "p", sc.Provinces}, {BoardClass, "c", sc.Classes}} {
		if d.n == 0 {
			continue
		}
		s := shards[d.typ]
		if s < 1 {
			return nil, fmt.Errorf("world: the scenario has %d %s boards but the family has no %s dimension", d.n, d.typ, d.typ)
		}
		w.first[d.typ], w.count[d.typ] = len(w.Boards), d.n
		dims = append(dims, dimSpec{typ: d.typ, short: d.short, n: d.n, table: newZipfTable(d.n, sc.BoardSkew),
			salt: uint64(len(dims)+1) * 0x5851f42d4c957f2d})
		for v := range d.n {
			w.Boards = append(w.Boards, WorldBoard{DimType: d.typ, Value: d.short + strconv.Itoa(v), Shards: s})
		}
	}
	for i := range w.Boards {
		b := &w.Boards[i]
		b.ShardMembers = make([]int64, b.Shards)
		b.EventShare = make([]float64, b.Shards)
		b.MemberReadShare = make([]float64, b.Shards)
	}
	n := sc.Members
	boardOf := func(di, i int) int { d := dims[di]; return w.first[d.typ] + d.table.quantile(unitHash(i, d.salt)) }
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
			norm[i] = harmonic(int(m), sc.MemberSkew)
		}
	}
	// Pass 2: shard of every member on each of its boards; event and read
	// shares.
	rankIn := make([]int, len(w.Boards)) // next rank within each dimension board
	buf := make([]byte, 0, len(sc.MemberPrefix)+12)
	for i := range n {
		buf = strconv.AppendInt(append(buf[:0], sc.MemberPrefix...), int64(i), 10)
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
func (w *World) ReadBoards(sel string, boardSkew float64, memberRead bool) []float64 {
	q := make([]float64, len(w.Boards))
	switch sel {
	case BoardNational:
		q[0] = 1
	case BoardAny:
		t := newZipfTable(len(w.Boards), boardSkew)
		for i := range q {
			q[i] = t.p(i)
		}
	default:
		n, ok := w.count[sel]
		if !ok {
			q[0] = 1
			break
		}
		t := newZipfTable(n, boardSkew)
		for k := range n {
			q[w.first[sel]+k] = t.p(k)
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

package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/workload"
)

// dim is a dimension type the scenario spreads members over: its values
// (members are assigned by d.ValueOf, a hash of the member; reads pick a
// value by d.Table, hot boards first) and the board index of value 0.
type dim struct {
	workload.Dim
	first int
}

// Board is one board of the world: national (index 0) or one dimension value.
type Board struct {
	Type  string // "national" or the dimension type
	Value string // "" for national
	Dim   int    // index in World.dims; -1 for national
}

// Dimension returns "national" or "type:value", as in the API.
func (b Board) Dimension() string {
	if b.Value == "" {
		return workload.BoardNational
	}
	return b.Type + ":" + b.Value
}

// World is the data shape of a scenario: members, the boards each member is
// on, and the members of each board. Member i is MemberPrefix+i; its boards
// are national plus one value per dimension, drawn from a Zipf over the
// values with a hash of i (not the seed), so every run with the same members,
// provinces, classes and board_skew agrees with the prefill.
type World struct {
	sc         *Scenario
	valueField string // "delta" (sum families) or "value" (max/min)
	// cols are the family's sort columns (from the gateway config; nil:
	// none): every event carries a value for each (ColumnValues).
	cols       []rank.Column
	dims       []dim
	member     [][]int32 // [dim][member] → value index
	boards     []Board
	onBoard    [][]int32        // [board] → members on it (nil for national: all)
	boardZipf  []*workload.Zipf // [board] → hot members of that board
	memberZipf *workload.Zipf
	anyBoard   *workload.ZipfTable // over all boards
}

// NewWorld builds the world of a scenario.
func NewWorld(sc *Scenario, valueField string) (*World, error) {
	w := &World{sc: sc, valueField: valueField, boards: []Board{{Type: workload.BoardNational, Dim: -1}}}
	dims, err := sc.Dims()
	if err != nil {
		return nil, err
	}
	for _, d := range dims {
		w.dims = append(w.dims, dim{Dim: d, first: len(w.boards)})
		for v := range d.N {
			w.boards = append(w.boards, Board{Type: d.Type, Value: d.ValueName(v), Dim: len(w.dims) - 1})
		}
	}
	w.member = make([][]int32, len(w.dims))
	w.onBoard = make([][]int32, len(w.boards))
	for di, d := range w.dims {
		w.member[di] = make([]int32, sc.Members)
		for i := range sc.Members {
			v := d.ValueOf(i)
			w.member[di][i] = int32(v)
			b := d.first + v
			w.onBoard[b] = append(w.onBoard[b], int32(i))
		}
	}
	if w.memberZipf, err = workload.NewZipf(sc.Members, sc.MemberSkew); err != nil {
		return nil, err
	}
	w.boardZipf = make([]*workload.Zipf, len(w.boards))
	for b := 1; b < len(w.boards); b++ {
		if n := len(w.onBoard[b]); n > 0 {
			if w.boardZipf[b], err = workload.NewZipf(n, sc.MemberSkew); err != nil {
				return nil, err
			}
		}
	}
	if w.anyBoard, err = workload.NewZipfTable(len(w.boards), sc.BoardSkew); err != nil {
		return nil, err
	}
	return w, nil
}

// MemberName returns the member id of index i.
func (w *World) MemberName(i int32) string { return w.sc.MemberName(int(i)) }

// MemberBoards returns the boards of member i: national first, then one per
// dimension in the order of w.dims.
func (w *World) MemberBoards(i int32, dst []int) []int {
	dst = append(dst[:0], 0)
	for di, d := range w.dims {
		dst = append(dst, d.first+int(w.member[di][i]))
	}
	return dst
}

// Op is one generated request, independent of where it is sent.
type Op struct {
	Spec   int    // index in Scenario.Ops
	Kind   string // Op* constant
	Board  int    // reads: board index
	Users  []int32
	Deltas []int64 // writes: points per event
	Event  uint64  // writes: number of the first event
	Prefix string  // writes: event ids are Prefix.N
	Cursor any     // page: where to continue (nil: first page)
}

// shared is what the generators of one run share: the event counter, the
// event-id prefix (unique per run) and the page cursors.
type shared struct {
	events atomic.Uint64
	prefix string
	pools  *cursorPools
}

func newShared(prefix string) *shared { return &shared{prefix: prefix, pools: newCursorPools()} }

// cursorPools keeps recent page cursors per board, so that page operations
// walk boards page after page. Cursors are opaque: strings over HTTP,
// rank.Item for the baseline.
type cursorPools struct {
	mu    sync.Mutex
	pools map[int][]any
}

const cursorPoolSize = 64

func newCursorPools() *cursorPools { return &cursorPools{pools: map[int][]any{}} }

func (p *cursorPools) put(board int, c any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.pools[board]
	if len(l) >= cursorPoolSize {
		copy(l, l[1:])
		l = l[:len(l)-1]
	}
	p.pools[board] = append(l, c)
}

// take removes and returns the newest cursor of a board, or nil.
func (p *cursorPools) take(board int) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.pools[board]
	if len(l) == 0 {
		return nil
	}
	c := l[len(l)-1]
	p.pools[board] = l[:len(l)-1]
	return c
}

// Gen draws operations from a scenario's mix. A Gen is not safe for
// concurrent use; the counters and cursor pools it shares are.
type Gen struct {
	w     *World
	specs []workload.OpSpec
	cum   []float64
	r     *rand.Rand
	sh    *shared
}

// NewGen returns a generator seeded with seed and stream.
func NewGen(w *World, seed, stream uint64, sh *shared) *Gen {
	g := &Gen{w: w, specs: w.sc.Ops, r: rand.New(rand.NewPCG(seed, stream)), sh: sh}
	var sum float64
	for _, s := range g.specs {
		sum += s.Weight
		g.cum = append(g.cum, sum)
	}
	return g
}

// pick chooses an operation spec by weight.
func (g *Gen) pick() int {
	x := g.r.Float64() * g.cum[len(g.cum)-1]
	for i, c := range g.cum {
		if x < c && g.specs[i].Weight > 0 {
			return i
		}
	}
	return len(g.cum) - 1
}

// board chooses a board for a read.
func (g *Gen) board(sel string) int {
	w := g.w
	switch sel {
	case workload.BoardNational:
		return 0
	case workload.BoardAny:
		return w.anyBoard.Sample(g.r)
	}
	for _, d := range w.dims {
		if d.Type == sel {
			return d.first + d.Table.Sample(g.r)
		}
	}
	return 0
}

// memberOn draws a member of board b (hot members first).
func (g *Gen) memberOn(b int) int32 {
	if b == 0 || g.w.boardZipf[b] == nil {
		return int32(g.w.memberZipf.Sample(g.r))
	}
	return g.w.onBoard[b][g.w.boardZipf[b].Sample(g.r)]
}

// readBoard chooses a board for a member read: one that has members.
func (g *Gen) readBoard(sel string) int {
	b := g.board(sel)
	if b != 0 && len(g.w.onBoard[b]) == 0 {
		return 0
	}
	return b
}

// Next draws the next operation.
func (g *Gen) Next() Op {
	i := g.pick()
	s := &g.specs[i]
	op := Op{Spec: i, Kind: s.Op}
	switch s.Op {
	case workload.OpEvent, workload.OpBatch:
		n := 1
		if s.Op == workload.OpBatch {
			n = s.Batch
		}
		op.Users = make([]int32, n)
		op.Deltas = make([]int64, n)
		for j := range n {
			op.Users[j] = int32(g.w.memberZipf.Sample(g.r))
			op.Deltas[j] = 1 + g.r.Int64N(g.w.sc.DeltaMax)
		}
		op.Event = g.sh.events.Add(uint64(n)) - uint64(n)
		op.Prefix = g.sh.prefix
	case workload.OpTop:
		op.Board = g.board(s.Board)
	case workload.OpPage:
		op.Board = g.board(s.Board)
		if g.r.IntN(s.Depth) != 0 {
			op.Cursor = g.sh.pools.take(op.Board)
		}
	case workload.OpMember, workload.OpAround:
		op.Board = g.readBoard(s.Board)
		op.Users = []int32{g.memberOn(op.Board)}
	case workload.OpLookup:
		op.Board = g.readBoard(s.Board)
		op.Users = make([]int32, s.Users)
		for j := range op.Users {
			op.Users[j] = g.memberOn(op.Board)
		}
	default:
		panic(fmt.Sprintf("unknown op %q", s.Op))
	}
	return op
}

// eventID is the id of event number n of a run.
func eventID(prefix string, n uint64) string { return prefix + "." + strconv.FormatUint(n, 10) }

// ColumnValues are the sort column values an event carries: a hash of its
// id, so a replay and the baseline send the same, spread over
// [0, min(max, 999)] — small ranges, so members equal on points often
// differ on columns and sometimes tie on them too.
func (w *World) ColumnValues(evID string) []int64 {
	if len(w.cols) == 0 {
		return nil
	}
	out := make([]int64, len(w.cols))
	for k, c := range w.cols {
		h := fnv.New64a()
		h.Write([]byte(evID))
		h.Write([]byte{byte(k)})
		out[k] = int64(h.Sum64() % uint64(min(c.Max, 999)+1))
	}
	return out
}

// appendColumns appends `,"columns":{...}` for event evID (nothing on a
// family without columns).
func appendColumns(b []byte, w *World, evID string) []byte {
	vals := w.ColumnValues(evID)
	if vals == nil {
		return b
	}
	b = append(b, `,"columns":{`...)
	for k, c := range w.cols {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, c.Name)
		b = append(b, ':')
		b = strconv.AppendInt(b, vals[k], 10)
	}
	return append(b, '}')
}

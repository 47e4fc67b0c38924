package gateway

import (
	"sort"
)

// refBoard is the in-memory reference: one unsharded board that orders
// members by the ranking rules directly — points (higher first, or
// lower first for asc), then achievement seq (earlier first) under tie
// "first", then member bytes descending — without the score encoding.
type refBoard struct {
	asc      bool
	tieFirst bool
	comp     bool
	members  map[string]*refMember
	live     map[string]int // applied, not reversed changes per member
	// cols are the sort columns after points (nil: none); equal points are
	// ordered by them, each by its own order, before the tie rule.
	cols []refCol
}

// refCol is one sort column of the reference: asc (lower is better) or
// desc, and how a sum family combines it (sum | last | max | min).
type refCol struct {
	name string
	asc  bool
	max  int64
	agg  string
}

type refMember struct {
	points int64
	seq    int64
	cols   []int64
	md     string // metadata of the change that last moved the member
}

type refEntry struct {
	user     string
	points   int64
	position int64
	rank     int64
	cols     map[string]int64 // nil on a family without columns
}

func newRef(asc, tieFirst, comp bool) *refBoard {
	return &refBoard{asc: asc, tieFirst: tieFirst, comp: comp, members: map[string]*refMember{}, live: map[string]int{}}
}

// better reports whether points a rank strictly ahead of points b.
func (r *refBoard) better(a, b int64) bool {
	if r.asc {
		return a < b
	}
	return a > b
}

func (r *refBoard) sorted() []refEntry {
	users := make([]string, 0, len(r.members))
	for u := range r.members {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool {
		a, b := r.members[users[i]], r.members[users[j]]
		if a.points != b.points {
			return r.better(a.points, b.points)
		}
		if c := r.cmpCols(a.cols, b.cols); c != 0 {
			return c > 0
		}
		if r.tieFirst && a.seq != b.seq {
			return a.seq < b.seq
		}
		return users[i] > users[j]
	})
	out := make([]refEntry, len(users))
	for i, u := range users {
		self := r.members[u]
		e := refEntry{user: u, points: self.points, position: int64(i), rank: int64(i) + 1}
		if r.cols != nil {
			e.cols = map[string]int64{}
			for k, c := range r.cols {
				e.cols[c.name] = self.cols[k]
			}
		}
		if r.comp {
			var more int64
			for _, m := range r.members {
				if r.better(m.points, e.points) || (m.points == e.points && r.cmpCols(m.cols, self.cols) > 0) {
					more++
				}
			}
			e.rank = more + 1
		}
		out[i] = e
	}
	return out
}

// cmpCols compares column tuples in column order: > 0 when a is better.
func (r *refBoard) cmpCols(a, b []int64) int {
	for k, c := range r.cols {
		if a[k] == b[k] {
			continue
		}
		if (a[k] < b[k]) == c.asc {
			return 1
		}
		return -1
	}
	return 0
}

func (r *refBoard) add(user string, delta, seq int64) {
	m, ok := r.members[user]
	if !ok {
		m = &refMember{}
		r.members[user] = m
	}
	m.points += delta
	m.seq = seq
	r.live[user]++
}

// best keeps the member's best value (max: higher, min: lower); it reports
// whether the value improved.
func (r *refBoard) best(user string, v, seq int64, higher bool) bool {
	m, ok := r.members[user]
	if ok && !((higher && v > m.points) || (!higher && v < m.points)) {
		return false
	}
	r.members[user] = &refMember{points: v, seq: seq}
	return true
}

package rank

import (
	"encoding/json"
	"math"
	"strconv"
)

// MaxSafe is 2^53: every integer of magnitude up to MaxSafe is exact in a
// float64, the type of a sorted-set score. No reachable score may leave it.
const MaxSafe int64 = 1 << 53

// Entry is one member of a board as the API shows it.
type Entry struct {
	User     string            `json:"user"`
	Points   int64             `json:"points"`
	Position int64             `json:"position"`
	Rank     int64             `json:"rank"`
	Profile  map[string]string `json:"profile,omitempty"`
	// Columns: the sort column values (families with columns only).
	Columns map[string]int64 `json:"columns,omitempty"`
	// Metadata: the entry's metadata, asked for with metadata=1.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// ColKey is the column part of the stored member (Columns.Key): entries
	// equal on points and ColKey share a competition rank.
	ColKey string `json:"-"`
}

// Item is one sorted-set element: the stored score and the member. Board order
// is Redis ZREVRANGE order: score descending, then member bytes descending.
type Item struct {
	Score  int64
	Member string
}

// Before reports whether a comes strictly before b in board order.
func Before(a, b Item) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Member > b.Member
}

// RankMode says how a rank is derived from positions.
type RankMode int

const (
	// Ordinal: rank = position + 1.
	Ordinal RankMode = iota
	// Competition: rank = 1 + members with strictly more points (1, 2, 2, 4).
	Competition
)

// Encoding turns points (and, under tie "first", an achievement seq) into a
// stored score and back. A family with order asc stores negated points so that
// one read path (higher score first) serves both orders.
//
// Under tie "first": score = stored × B + (B − 1 − seq), where stored is
// points (desc) or −points (asc). Under tie "member": score = stored.
type Encoding struct {
	B         int64 // 0: tie member (or a family with columns); ≥2: tie first
	Asc       bool
	MaxPoints int64 // |points| bound
	// Cols is the sort-column encoding of the stored member (nil: no
	// columns). A family with columns keeps B = 0: its score is the stored
	// points alone, and a tie-first seq lives in the member (Cols.B).
	Cols *Columns
}

// TieFirst reports whether the score carries an achievement seq.
func (e Encoding) TieFirst() bool { return e.B > 0 }

// TakesSeq reports whether writes need an achievement seq (tie first, in the
// score or in the stored member), and SeqCap is its capacity.
func (e Encoding) TakesSeq() bool { return e.SeqCap() > 0 }

// SeqCap is the achievement capacity B (0: tie member).
func (e Encoding) SeqCap() int64 {
	if e.Cols != nil {
		return e.Cols.B
	}
	return e.B
}

// Stored maps points to stored (sign-adjusted) points.
func (e Encoding) Stored(points int64) int64 {
	if e.Asc {
		return -points
	}
	return points
}

// Points maps stored points back to points.
func (e Encoding) Points(stored int64) int64 { return e.Stored(stored) }

// CheckPoints refuses points outside ±MaxPoints with out_of_range.
func (e Encoding) CheckPoints(field string, points int64) error {
	if points > e.MaxPoints || points < -e.MaxPoints {
		return &Error{Code: CodeOutOfRange, Field: field,
			Message: "points must stay within ±max_points (" + strconv.FormatInt(e.MaxPoints, 10) + ")"}
	}
	return nil
}

// Score encodes points and seq into a stored score. It refuses a seq outside
// [0, B) and points outside ±MaxPoints.
func (e Encoding) Score(points, seq int64) (int64, error) {
	if err := e.CheckPoints("points", points); err != nil {
		return 0, err
	}
	s := e.Stored(points)
	if e.B == 0 {
		return s, nil
	}
	if seq < 0 || seq >= e.B {
		return 0, &Error{Code: CodeOutOfRange, Message: "achievement seq " + strconv.FormatInt(seq, 10) + " exceeds seq_capacity − 1 (" + strconv.FormatInt(e.B-1, 10) + ")"}
	}
	return s*e.B + (e.B - 1 - seq), nil
}

// Decode splits a stored score into points and seq (seq is 0 under tie member).
func (e Encoding) Decode(score int64) (points, seq int64) {
	if e.B == 0 {
		return e.Points(score), 0
	}
	q, r := score/e.B, score%e.B
	if r < 0 { // floor division
		q--
		r += e.B
	}
	return e.Points(q), e.B - 1 - r
}

// PointsOf returns the points of a stored score.
func (e Encoding) PointsOf(score int64) int64 {
	p, _ := e.Decode(score)
	return p
}

// MinScoreAbove returns the smallest stored score whose points are strictly
// better than the given points: every score ≥ it ranks on strictly more points.
func (e Encoding) MinScoreAbove(points int64) int64 {
	s := e.Stored(points) + 1
	if e.B == 0 {
		return s
	}
	return s * e.B
}

// MinScoreOf returns the smallest stored score whose points are at least as
// good as the given points.
func (e Encoding) MinScoreOf(points int64) int64 {
	s := e.Stored(points)
	if e.B == 0 {
		return s
	}
	return s * e.B
}

// ScoreBand returns the stored-score interval [lo, hi] holding exactly the
// members whose points lie in [minPoints, maxPoints].
func (e Encoding) ScoreBand(minPoints, maxPoints int64) (lo, hi int64) {
	a, b := e.Stored(minPoints), e.Stored(maxPoints)
	if a > b {
		a, b = b, a
	}
	if e.B == 0 {
		return a, b
	}
	return a * e.B, b*e.B + e.B - 1
}

// ToFloat converts a score to the float64 Redis stores; exact within ±2^53.
func ToFloat(score int64) float64 { return float64(score) }

// FromFloat converts a Redis score back, refusing what is not an exact
// integer within ±2^53.
func FromFloat(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f > float64(MaxSafe) || f < -float64(MaxSafe) {
		return 0, false
	}
	return int64(f), true
}

// FillRanks sets Position and Rank of entries that are consecutive in board
// order starting at position first. moreThanFirst is the number of board
// members with strictly more points than entries[0] (used by competition
// ranking; ignored by ordinal).
func FillRanks(entries []Entry, first int64, moreThanFirst int64, mode RankMode) {
	for i := range entries {
		pos := first + int64(i)
		entries[i].Position = pos
		switch {
		case mode == Ordinal:
			entries[i].Rank = pos + 1
		case i == 0:
			entries[i].Rank = moreThanFirst + 1
		case entries[i].Points == entries[i-1].Points && entries[i].ColKey == entries[i-1].ColKey:
			entries[i].Rank = entries[i-1].Rank
		default:
			entries[i].Rank = pos + 1
		}
	}
}

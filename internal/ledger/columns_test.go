package ledger

import (
	"slices"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

// The column rules of the ledger, against what columns.lua does (the
// gateway's property test runs both on the same streams).
func TestColumnRules(t *testing.T) {
	t.Parallel()
	cols := []rank.Column{{Name: "time", Asc: true, Max: 100, Agg: "last"}, {Name: "kills", Max: 50, Agg: "sum"},
		{Name: "best", Max: 9, Agg: "max"}, {Name: "low", Asc: true, Max: 9, Agg: "min"}}
	for _, tc := range []struct {
		name    string
		a, b    []int64
		wantCmp int
	}{
		{"equal", []int64{5, 5, 5, 5}, []int64{5, 5, 5, 5}, 0},
		{"lower time first (asc)", []int64{4, 0, 0, 0}, []int64{5, 9, 9, 0}, 1},
		{"more kills first (desc)", []int64{5, 6, 0, 9}, []int64{5, 5, 9, 0}, 1},
		{"last column decides", []int64{5, 5, 5, 6}, []int64{5, 5, 5, 5}, -1},
		{"a row without columns reads as zeros", []int64{}, []int64{0, 0, 0, 1}, 1},
		{"a short row reads as zeros past its end", []int64{5}, []int64{5, 1, 0, 0}, -1},
	} {
		if got := cmpCols(cols, tc.a, tc.b); got != tc.wantCmp {
			t.Errorf("%s: cmpCols = %d, want %d", tc.name, got, tc.wantCmp)
		}
		if got := cmpCols(cols, tc.b, tc.a); got != -tc.wantCmp {
			t.Errorf("%s: cmpCols reversed = %d, want %d", tc.name, got, -tc.wantCmp)
		}
	}
	for _, tc := range []struct {
		name           string
		cur, ev, after []int64
	}{
		{"a new member takes the event's values", nil, []int64{7, 3, 4, 5}, []int64{7, 3, 4, 5}},
		{"each column by its aggregate", []int64{7, 3, 4, 5}, []int64{9, 2, 1, 8}, []int64{9, 5, 4, 5}},
		{"max and min move", []int64{7, 3, 4, 5}, []int64{1, 0, 6, 2}, []int64{1, 3, 6, 2}},
		{"a present row without columns starts from zeros", []int64{}, []int64{9, 2, 1, 8}, []int64{9, 2, 1, 0}},
	} {
		if got := combineCols(cols, tc.cur, tc.ev); !slices.Equal(got, tc.after) {
			t.Errorf("%s: combineCols = %v, want %v", tc.name, got, tc.after)
		}
	}
	for _, tc := range []struct {
		name                      string
		cur, before, after, wantR []int64
	}{
		{"the latest change: every column back", []int64{9, 5, 4, 5}, []int64{7, 3, 4, 5}, []int64{9, 5, 4, 5}, []int64{7, 3, 4, 5}},
		{"not the latest: only sums give back", []int64{1, 9, 6, 2}, []int64{7, 3, 4, 5}, []int64{9, 5, 4, 5}, []int64{1, 7, 6, 2}},
		{"the member was new: sums give back all", []int64{7, 3, 4, 5}, nil, []int64{7, 3, 4, 5}, []int64{7, 0, 4, 5}},
	} {
		if got := reverseCols(cols, tc.cur, tc.before, tc.after); !slices.Equal(got, tc.wantR) {
			t.Errorf("%s: reverseCols = %v, want %v", tc.name, got, tc.wantR)
		}
	}
	if p := colsText([]int64{1, -2, 30}); p == nil || *p != "{1,-2,30}" {
		t.Errorf("colsText = %v", p)
	}
	if colsText(nil) != nil {
		t.Error("colsText(nil) is not NULL")
	}
}

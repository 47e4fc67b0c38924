package competition

import (
	"reflect"
	"testing"

	"github.com/rankgate/rankgate/internal/config"
)

func TestMoves(t *testing.T) {
	t.Parallel()
	three := &config.Cohorts{Size: 5, Tiers: []string{"b", "s", "g"}, Promote: 2, Demote: 1}
	mv := func(m, from, to, cohort string, pos int64) Move {
		return Move{Member: m, From: from, To: to, Cohort: cohort, Position: pos}
	}
	tests := []struct {
		name    string
		c       *config.Cohorts
		cohorts []Cohort
		want    []Move
	}{
		{"middle tier: top 2 up, bottom 1 down", three,
			[]Cohort{{Tier: "s", Name: "s-1", Members: []string{"a", "b", "c", "d", "e"}}},
			[]Move{mv("a", "s", "g", "s-1", 0), mv("b", "s", "g", "s-1", 1), mv("e", "s", "b", "s-1", 4)}},
		{"top tier: nobody goes up", three,
			[]Cohort{{Tier: "g", Name: "g-3", Members: []string{"a", "b", "c", "d", "e"}}},
			[]Move{mv("e", "g", "s", "g-3", 4)}},
		{"bottom tier: nobody goes down", three,
			[]Cohort{{Tier: "b", Name: "b-1", Members: []string{"a", "b", "c", "d", "e"}}},
			[]Move{mv("a", "b", "s", "b-1", 0), mv("b", "b", "s", "b-1", 1)}},
		{"a cohort smaller than promote + demote promotes first", three,
			[]Cohort{{Tier: "s", Name: "s-2", Members: []string{"a", "b"}}},
			[]Move{mv("a", "s", "g", "s-2", 0), mv("b", "s", "g", "s-2", 1)}},
		{"three members: two up, the last down", three,
			[]Cohort{{Tier: "s", Name: "s-2", Members: []string{"a", "b", "c"}}},
			[]Move{mv("a", "s", "g", "s-2", 0), mv("b", "s", "g", "s-2", 1), mv("c", "s", "b", "s-2", 2)}},
		{"one member alone is promoted", three,
			[]Cohort{{Tier: "b", Name: "b-9", Members: []string{"solo"}}},
			[]Move{mv("solo", "b", "s", "b-9", 0)}},
		{"empty cohort", three, []Cohort{{Tier: "s", Name: "s-1"}}, nil},
		{"one tier: nobody moves", &config.Cohorts{Size: 3, Tiers: []string{"only"}, Promote: 1, Demote: 1},
			[]Cohort{{Tier: "only", Name: "only-1", Members: []string{"a", "b", "c"}}}, nil},
		{"a tier no longer configured does not move", three,
			[]Cohort{{Tier: "x", Name: "x-1", Members: []string{"a", "b", "c"}}}, nil},
		{"promote 0 and demote 0", &config.Cohorts{Size: 3, Tiers: []string{"b", "s"}, Promote: 0, Demote: 0},
			[]Cohort{{Tier: "b", Name: "b-1", Members: []string{"a", "b", "c"}}}, nil},
		{"in the order of cohorts, then positions", three,
			[]Cohort{{Tier: "b", Name: "b-1", Members: []string{"a", "b", "c"}}, {Tier: "g", Name: "g-1", Members: []string{"x", "y", "z"}}},
			[]Move{mv("a", "b", "s", "b-1", 0), mv("b", "b", "s", "b-1", 1), mv("z", "g", "s", "g-1", 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Moves(tt.c, tt.cohorts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Moves = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

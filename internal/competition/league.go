package competition

import (
	"github.com/rankgate/rankgate/internal/config"

	"github.com/rankgate/rankgate/api/wire"
)

// MovedKind is the kind of a league move delivered to the awards webhook.
const MovedKind = "league.moved"

// Cohort is one cohort of a league period at its end: its tier, its name
// ("<tier>-<n>") and its members in board order (points, then the tie rule).
type Cohort struct {
	Tier    string
	Name    string
	Members []string
}

// Move is one member's change of tier at a league period's end.
type Move = wire.Move

// Moves computes the moves of a league period's end: in each cohort the
// first Promote positions move up one tier and the last Demote down (a
// cohort smaller than Promote + Demote promotes first and demotes from the
// rest); nobody leaves the top or bottom tier. Members not in a cohort (who
// did not play) do not move. The result is in the order of cohorts, then
// positions.
func Moves(c *config.Cohorts, cohorts []Cohort) []Move {
	var out []Move
	last := len(c.Tiers) - 1
	for _, co := range cohorts {
		ti := c.TierIndex(co.Tier)
		if ti < 0 {
			continue // a tier no longer configured: nowhere to move from
		}
		name := co.Name
		n := len(co.Members)
		up := min(c.Promote, n)
		down := min(c.Demote, n-up)
		if ti < last {
			for p := 0; p < up; p++ {
				out = append(out, Move{Member: co.Members[p], From: co.Tier, To: c.Tiers[ti+1], Cohort: name, Position: int64(p)})
			}
		}
		if ti > 0 {
			for p := n - down; p < n; p++ {
				out = append(out, Move{Member: co.Members[p], From: co.Tier, To: c.Tiers[ti-1], Cohort: name, Position: int64(p)})
			}
		}
	}
	return out
}

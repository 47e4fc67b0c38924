package wire

// Leagues: GET /v1/families/{family}/members/{member}/league, …/cohorts and
// …/moves.

// LeagueStanding is a member's tier and cohort in a league period.
type LeagueStanding struct {
	Family string `json:"family"`
	Period string `json:"period"`
	Member string `json:"member"`
	// Tier is the tier the member plays the period in (placed), or will be
	// placed in.
	Tier string `json:"tier"`
	// Cohort is "<tier>-<n>"; nil before the member's first event of the
	// period.
	Cohort *string `json:"cohort"`
	// Board is the cohort's board, "{family}/{period}/cohort:<tier>-<n>";
	// nil when not placed.
	Board *string `json:"board"`
}

// Cohort is one cohort of a league period and its size.
type Cohort struct {
	Cohort string `json:"cohort"`
	Tier   string `json:"tier"`
	Size   int64  `json:"size"`
}

// CohortList lists a league period's cohorts, by tier (lowest first) and
// number.
type CohortList struct {
	Family  string   `json:"family"`
	Period  string   `json:"period"`
	Cohorts []Cohort `json:"cohorts"`
}

// Move is one member's change of tier at a league period's end.
type Move struct {
	Member   string `json:"member"`
	From     string `json:"from"`
	To       string `json:"to"`
	Cohort   string `json:"cohort"`
	Position int64  `json:"position"` // in the cohort's board, from 0
}

// MoveList is a league period's moves; Recorded is false before its end
// was computed (no moves yet).
type MoveList struct {
	Family   string `json:"family"`
	Period   string `json:"period"`
	Recorded bool   `json:"recorded"`
	Moves    []Move `json:"moves"`
}

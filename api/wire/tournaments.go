package wire

import (
	"encoding/json"
	"time"
)

// Tournament is a tournament as POST /v1/tournaments takes it (schema
// TournamentRequest). A one-shot tournament sets Start and End; a recurring
// one Reset (a 5-field cron in Timezone) and Duration (a Go duration such as
// "1h"), Start (default: its creation) and End (none: it recurs until
// cancelled) then bounding the series. Nil pointers and empty strings take
// the gateway's defaults (tournaments.defaults in its config).
type Tournament struct {
	ID           string               `json:"id"`
	Title        string               `json:"title,omitempty"`
	Aggregate    string               `json:"aggregate,omitempty"` // sum | max | min (default sum)
	Order        string               `json:"order,omitempty"`     // desc | asc (default desc)
	Tie          string               `json:"tie,omitempty"`       // member | first (default member)
	Rank         string               `json:"rank,omitempty"`      // ordinal | competition (default competition)
	Start        *time.Time           `json:"start,omitempty"`
	End          *time.Time           `json:"end,omitempty"`
	Reset        string               `json:"reset,omitempty"`
	Duration     string               `json:"duration,omitempty"`
	Timezone     string               `json:"timezone,omitempty"`      // of Reset (default UTC)
	MaxSize      *int64               `json:"max_size,omitempty"`      // absent: no bound on joins
	MaxAttempts  *int64               `json:"max_attempts,omitempty"`  // absent: no bound on events
	JoinRequired bool                 `json:"join_required,omitempty"` // events need a join first
	Shards       *int                 `json:"shards,omitempty"`
	MaxPoints    *int64               `json:"max_points,omitempty"`
	Grace        string               `json:"grace,omitempty"` // late-event window after each period's end
	Columns      []TournamentColumn   `json:"columns,omitempty"`
	Lifecycle    *TournamentLifecycle `json:"lifecycle,omitempty"`
	Metadata     json.RawMessage      `json:"metadata,omitempty"`
}

// TournamentColumn is one sort column of a tournament (schema
// TournamentColumn).
type TournamentColumn struct {
	Name      string `json:"name"`
	Order     string `json:"order,omitempty"`
	Max       int64  `json:"max"`
	Aggregate string `json:"aggregate,omitempty"`
}

// TournamentLifecycle is when a period settles and archives after its
// freeze (at end + grace, always automatic). Absent steps take the defaults:
// settle 1 m after the freeze with the top 100 (ledger mode), archive 24 h
// later (schema TournamentLifecycle).
type TournamentLifecycle struct {
	Settle  *TournamentStep `json:"settle,omitempty"`
	Archive *TournamentStep `json:"archive,omitempty"`
}

// TournamentStep is one lifecycle step: a Go duration after the step before,
// and (settle only) how many standings per board are saved.
type TournamentStep struct {
	After string `json:"after,omitempty"`
	Top   int    `json:"top,omitempty"`
}

// TournamentInfo is a tournament as the gateway answers it (schema
// TournamentInfo): its rules with every default filled, when it was created
// (and cancelled), its state (upcoming, active, ended, cancelled), the seats
// taken in Period — the period running now, else the next one (ended: the
// last) — and that period's bounds.
type TournamentInfo struct {
	Tournament
	Created   time.Time  `json:"created"`
	Cancelled *time.Time `json:"cancelled,omitempty"`
	State     string     `json:"state"`
	Size      int64      `json:"size"`
	Period    string     `json:"period"`
	Starts    time.Time  `json:"starts"`
	Ends      time.Time  `json:"ends"`
}

// TournamentList answers GET /v1/tournaments (schema TournamentList).
type TournamentList struct {
	Tournaments []TournamentInfo `json:"tournaments"`
}

// JoinResult answers POST /v1/tournaments/{id}/join: Joined false when the
// member was in already (schema JoinResult).
type JoinResult struct {
	Joined bool   `json:"joined"`
	Size   int64  `json:"size"`
	Period string `json:"period"`
}

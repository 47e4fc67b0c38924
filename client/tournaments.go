package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Tournament is a tournament as POST /v1/tournaments takes it. A one-shot
// tournament sets Start and End; a recurring one Reset (a 5-field cron in
// Timezone) and Duration (a Go duration such as "1h"), Start and End then
// bounding the series. Nil pointers and empty strings take the gateway's
// defaults (tournaments.defaults in its config).
type Tournament struct {
	ID           string             `json:"id"`
	Title        string             `json:"title,omitempty"`
	Aggregate    string             `json:"aggregate,omitempty"` // sum | max | min
	Order        string             `json:"order,omitempty"`     // desc | asc
	Tie          string             `json:"tie,omitempty"`       // member | first
	Rank         string             `json:"rank,omitempty"`      // ordinal | competition
	Start        *time.Time         `json:"start,omitempty"`
	End          *time.Time         `json:"end,omitempty"`
	Reset        string             `json:"reset,omitempty"`
	Duration     string             `json:"duration,omitempty"`
	Timezone     string             `json:"timezone,omitempty"`
	MaxSize      *int64             `json:"max_size,omitempty"`
	MaxAttempts  *int64             `json:"max_attempts,omitempty"`
	JoinRequired bool               `json:"join_required,omitempty"`
	Shards       *int               `json:"shards,omitempty"`
	MaxPoints    *int64             `json:"max_points,omitempty"`
	Grace        string             `json:"grace,omitempty"`
	Columns      []TournamentColumn `json:"columns,omitempty"`
	Lifecycle    *json.RawMessage   `json:"lifecycle,omitempty"` // {"settle": {"after", "top"}, "archive": {"after"}}
	Metadata     json.RawMessage    `json:"metadata,omitempty"`
}

// TournamentColumn is one sort column of a tournament.
type TournamentColumn struct {
	Name      string `json:"name"`
	Order     string `json:"order,omitempty"`
	Max       int64  `json:"max"`
	Aggregate string `json:"aggregate,omitempty"`
}

// TournamentInfo is a tournament as the gateway answers it: its rules with
// every default filled, its state (upcoming, active, ended, cancelled), the
// seats taken in Period — the period running now, else the next one (ended:
// the last) — and that period's bounds.
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

// JoinResult answers a join: Joined false when the member was in already.
type JoinResult struct {
	Joined bool   `json:"joined"`
	Size   int64  `json:"size"`
	Period string `json:"period"`
}

func tournamentPath(id string) string { return "/v1/tournaments/" + url.PathEscape(id) }

// CreateTournament creates a tournament (admin). Not retried: a retry of a
// create that went through would answer already_exists.
func (c *Client) CreateTournament(ctx context.Context, t Tournament) (TournamentInfo, error) {
	var out TournamentInfo
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/tournaments", body: t, want: http.StatusCreated}, &out)
	return out, err
}

// Tournament returns one tournament.
func (c *Client) Tournament(ctx context.Context, id string) (TournamentInfo, error) {
	var out TournamentInfo
	err := c.do(ctx, call{method: http.MethodGet, path: tournamentPath(id), idempotent: true}, &out)
	return out, err
}

// Tournaments lists the tournaments in state (upcoming, active, ended,
// cancelled; "": all), by id.
func (c *Client) Tournaments(ctx context.Context, state string) ([]TournamentInfo, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	var out struct {
		Tournaments []TournamentInfo `json:"tournaments"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/tournaments", query: q, idempotent: true}, &out)
	return out.Tournaments, err
}

// CancelTournament cancels a tournament (admin; idempotent: retried).
func (c *Client) CancelTournament(ctx context.Context, id string) (TournamentInfo, error) {
	var out TournamentInfo
	err := c.do(ctx, call{method: http.MethodDelete, path: tournamentPath(id), idempotent: true}, &out)
	return out, err
}

// Join seats member in the tournament's running (or next) period. Retried: a
// join of a member already in answers Joined false.
func (c *Client) Join(ctx context.Context, id, member string) (JoinResult, error) {
	var out JoinResult
	err := c.do(ctx, call{method: http.MethodPost, path: tournamentPath(id) + "/join",
		body: map[string]string{"user": member}, idempotent: true}, &out)
	return out, err
}

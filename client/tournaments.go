package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/rankgate/rankgate/api/wire"
)

// The tournament types are package wire's (see types.go).
type (
	// Tournament is a tournament as POST /v1/tournaments takes it. A
	// one-shot tournament sets Start and End; a recurring one Reset (a
	// 5-field cron in Timezone) and Duration (a Go duration such as "1h"),
	// Start and End then bounding the series. Nil pointers and empty
	// strings take the gateway's defaults (tournaments.defaults in its
	// config).
	Tournament = wire.Tournament
	// TournamentColumn is one sort column of a tournament.
	TournamentColumn = wire.TournamentColumn
	// TournamentLifecycle is when a period settles and archives after its
	// freeze.
	TournamentLifecycle = wire.TournamentLifecycle
	// TournamentStep is one lifecycle step.
	TournamentStep = wire.TournamentStep
	// TournamentInfo is a tournament as the gateway answers it: its rules
	// with every default filled, its state (upcoming, active, ended,
	// cancelled), the seats taken in Period — the period running now, else
	// the next one (ended: the last) — and that period's bounds.
	TournamentInfo = wire.TournamentInfo
	// JoinResult answers a join: Joined false when the member was in
	// already.
	JoinResult = wire.JoinResult
)

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
	var out wire.TournamentList
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

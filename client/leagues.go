package client

import (
	"context"
	"github.com/rankgate/rankgate/api/wire"
	"net/http"
	"net/url"
)

// Leagues: a member's tier and cohort, a period's cohorts and its moves.
type (
	LeagueStanding = wire.LeagueStanding
	Cohort         = wire.Cohort
	Move           = wire.Move
	MoveList       = wire.MoveList
)

func periodQuery(period string) url.Values {
	q := url.Values{}
	if period != "" {
		q.Set("period", period)
	}
	return q
}

// League returns a member's tier and cohort in a league (period "" or
// "current": the current one).
func (c *Client) League(ctx context.Context, family, member, period string) (LeagueStanding, error) {
	var out LeagueStanding
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/families/" + esc(family) + "/members/" + esc(member) + "/league",
		query: periodQuery(period), idempotent: true}, &out)
	return out, err
}

// Cohorts lists the cohorts of a league period.
func (c *Client) Cohorts(ctx context.Context, family, period string) ([]Cohort, error) {
	var out struct {
		Cohorts []Cohort `json:"cohorts"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/families/" + esc(family) + "/cohorts", query: periodQuery(period), idempotent: true}, &out)
	return out.Cohorts, err
}

// Moves lists the moves recorded at a league period's end.
func (c *Client) Moves(ctx context.Context, family, period string) (MoveList, error) {
	var out MoveList
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/families/" + esc(family) + "/moves", query: periodQuery(period), idempotent: true}, &out)
	return out, err
}

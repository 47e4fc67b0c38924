package client

import (
	"context"
	"net/http"
	"net/url"
)

// LeagueStanding is a member's tier and cohort in a league period.
type LeagueStanding struct {
	Family string  `json:"family"`
	Period string  `json:"period"`
	Member string  `json:"member"`
	Tier   string  `json:"tier"`
	Cohort *string `json:"cohort"` // nil before their first event of the period
	Board  *string `json:"board"`
}

// Cohort is one cohort of a league period.
type Cohort struct {
	Cohort string `json:"cohort"`
	Tier   string `json:"tier"`
	Size   int64  `json:"size"`
}

// Move is one member's change of tier at a league period's end.
type Move struct {
	Member   string `json:"member"`
	From     string `json:"from"`
	To       string `json:"to"`
	Cohort   string `json:"cohort"`
	Position int64  `json:"position"`
}

// MoveList is a league period's moves; Recorded is false before its end.
type MoveList struct {
	Family   string `json:"family"`
	Period   string `json:"period"`
	Recorded bool   `json:"recorded"`
	Moves    []Move `json:"moves"`
}

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

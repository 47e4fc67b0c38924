package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rankgate/rankgate/api/wire"
)

// Moderation (scope admin) and score history (scope read, ledger mode); the
// types are package wire's (see types.go).
type (
	// Removal is the body of RemoveMember: who removes and why.
	Removal = wire.Removal
	// RemovalResult answers RemoveMember: the points the member had.
	RemovalResult = wire.RemovalResult
	// BanRequest is the body of PutBan; no Families means every family.
	BanRequest = wire.BanRequest
	// Ban is one member's ban; empty Families: every family.
	Ban = wire.Ban
	// BanResult answers PutBan: the ban and the boards of the current
	// periods the member was removed from.
	BanResult = wire.BanResult
	// BanList answers Bans.
	BanList = wire.BanList
	// HistoryEvent is one event of a member's score history on a board.
	HistoryEvent = wire.HistoryEvent
	// History answers MemberHistory; follow NextCursor.
	History = wire.History
)

// RemoveMember takes a member off a board (sent once: a retry of a removal
// that went through answers 404 not_ranked).
func (c *Client) RemoveMember(ctx context.Context, b Board, member string, r Removal) (RemovalResult, error) {
	var out RemovalResult
	err := c.do(ctx, call{method: http.MethodDelete, path: b.path() + "/members/" + esc(member), body: r}, &out)
	return out, err
}

// MemberHistory returns a page of a member's score history on a board,
// newest first (limit 0: the server's default; cursor "": the newest).
func (c *Client) MemberHistory(ctx context.Context, b Board, member string, limit int, cursor string) (History, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out History
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/members/" + esc(member) + "/history", query: q, idempotent: true}, &out)
	return out, err
}

// PutBan bans a member (idempotent: banning again replaces the ban).
func (c *Client) PutBan(ctx context.Context, member string, r BanRequest) (BanResult, error) {
	var out BanResult
	err := c.do(ctx, call{method: http.MethodPut, path: "/v1/bans/" + esc(member), body: r, idempotent: true}, &out)
	return out, err
}

// DeleteBan lifts a member's ban (sent once: a retry after success is 404).
func (c *Client) DeleteBan(ctx context.Context, member string) (Ban, error) {
	var out Ban
	err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/bans/" + esc(member)}, &out)
	return out, err
}

// Bans lists every ban.
func (c *Client) Bans(ctx context.Context) (BanList, error) {
	var out BanList
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/bans", idempotent: true}, &out)
	return out, err
}

// Data rights: the answers of EraseMember and ExportMember.
type (
	ErasureResult  = wire.ErasureResult
	Export         = wire.Export
	ExportStanding = wire.ExportStanding
	MemberEvent    = wire.MemberEvent
)

// EraseMember erases a member from every board, their profile and (ledger
// mode) their ledger rows. Retried: a second erasure answers zeros, and one
// cut short is finished by running it again.
func (c *Client) EraseMember(ctx context.Context, member string, r Removal) (ErasureResult, error) {
	var out ErasureResult
	err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/members/" + esc(member), body: r, idempotent: true}, &out)
	return out, err
}

// ExportMember returns what is kept of a member: profile, standings and
// (ledger mode) events.
func (c *Client) ExportMember(ctx context.Context, member string) (Export, error) {
	var out Export
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/members/" + esc(member) + "/export", idempotent: true}, &out)
	return out, err
}

// Package client is a thin, typed Go client of rankgate's HTTP API (the
// contract: api/openapi.yaml, served at GET /v1/openapi.json).
//
// Retries are safe by construction: only requests that cannot count twice
// are retried — events and corrections (the gateway dedupes them by their
// ids, which a retry keeps), projections and profiles (PUTs of absolute
// values), reads, and the idempotent period operations (freeze, settle).
// Snapshots, rebuilds, derives, archives and review decisions are sent once.
// A retry waits with exponential backoff and full jitter, and at least the
// server's Retry-After. Retried: transport errors, 429 rate_limited, 502,
// 503 unavailable and 504. Every other answer is returned as an *Error.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("RANKGATE_TOKEN")))
//	res, err := c.PostEvent(ctx, client.Event{EventID: "evt-1", Family: "learning", User: "u42", Delta: client.Int(20)})
//	page, err := c.Top(ctx, client.Board{Family: "learning", Period: "current", Dimension: "national"}, 10, client.ReadOptions{})
//
// It speaks HTTP only: it must not import internal/gateway, internal/httpapi
// or any other rankgate package.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/api/wire"
)

// Client talks to one gateway. Safe for concurrent use.
type Client struct {
	base  string
	hc    *http.Client
	token string
	retry Retry
}

// Retry is the retry policy of idempotent requests.
type Retry struct {
	// Attempts is the most tries of one request, the first included
	// (1: no retries). Default 4.
	Attempts int
	// Base is the first backoff (doubled each retry, full jitter). Default 50ms.
	Base time.Duration
	// Max bounds one wait, Retry-After included. Default 5s.
	Max time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends through hc (default: a client with a 30 s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithToken sends "Authorization: Bearer token" (empty: none).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithRetry sets the retry policy; zero fields keep their defaults.
func WithRetry(r Retry) Option { return func(c *Client) { c.retry = r } }

// New returns a client of the gateway at baseURL (http://host:port).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	if c.retry.Attempts <= 0 {
		c.retry.Attempts = 4
	}
	if c.retry.Base <= 0 {
		c.retry.Base = 50 * time.Millisecond
	}
	if c.retry.Max <= 0 {
		c.retry.Max = 5 * time.Second
	}
	return c, nil
}

// Error is an answer other than 2xx: the API's error shape and status.
type Error struct {
	Status  int    `json:"-"`    // HTTP status
	Code    string `json:"code"` // invalid_argument, not_ranked, unavailable, ...
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("rankgate: %d %s: %s", e.Status, e.Code, e.Message)
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}

// Code returns the API error code of err ("" when err is not an *Error).
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// retryable reports whether an answer with this status may be retried.
func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// call is one API request.
type call struct {
	method     string
	path       string // escaped
	query      url.Values
	body       any // nil: no body
	idempotent bool
	want       int // the success status (0: 200)
}

// do sends cl, retrying idempotent requests, and decodes the answer into out
// (nil: discard).
func (c *Client) do(ctx context.Context, cl call, out any) error {
	var body []byte
	if cl.body != nil {
		var err error
		if body, err = json.Marshal(cl.body); err != nil {
			return fmt.Errorf("rankgate: encoding %s %s: %w", cl.method, cl.path, err)
		}
	}
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	attempts := 1
	if cl.idempotent {
		attempts = c.retry.Attempts
	}
	var last error
	for i := range attempts {
		if i > 0 {
			if err := c.wait(ctx, i, last); err != nil {
				return err
			}
		}
		again, err := c.once(ctx, cl, u, body, out)
		if err == nil || !again {
			return err
		}
		last = err
	}
	return last
}

// once sends one try; again reports whether a failure may be retried.
func (c *Client) once(ctx context.Context, cl call, u string, body []byte, out any) (again bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, rd)
	if err != nil {
		return false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return true, fmt.Errorf("rankgate: %s %s: %w", cl.method, cl.path, err)
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return true, fmt.Errorf("rankgate: %s %s: reading the answer: %w", cl.method, cl.path, err)
	}
	want := cl.want
	if want == 0 {
		want = http.StatusOK
	}
	if resp.StatusCode != want {
		return retryable(resp.StatusCode), errorOf(resp, data, 200)
	}
	if out == nil {
		return false, nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = data
		return false, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, fmt.Errorf("rankgate: %s %s: decoding the answer: %w", cl.method, cl.path, err)
	}
	return false, nil
}

// errorOf makes the Error of a refused answer whose body is data: the
// envelope's code, message and field, or else the body's text (cut to limit
// bytes when max > 0), and the Retry-After header.
func errorOf(resp *http.Response, data []byte, limit int) *Error {
	e := &Error{Status: resp.StatusCode}
	var env struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error != nil {
		e.Code, e.Message, e.Field = env.Error.Code, env.Error.Message, env.Error.Field
	} else {
		e.Message = strings.TrimSpace(string(data))
		if limit > 0 && len(e.Message) > limit {
			e.Message = e.Message[:limit]
		}
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// wait sleeps before retry i (1, 2, ...): full jitter over Base·2^(i−1),
// at least the Retry-After of the last answer, at most Max.
func (c *Client) wait(ctx context.Context, i int, last error) error {
	ceil := c.retry.Base << min(i-1, 20)
	if ceil > c.retry.Max || ceil <= 0 {
		ceil = c.retry.Max
	}
	d := rand.N(ceil + 1)
	var e *Error
	if errors.As(last, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	d = min(d, c.retry.Max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func esc(s string) string { return url.PathEscape(s) }

func (b Board) path() string {
	return "/v1/boards/" + esc(b.Family) + "/" + esc(b.Period) + "/" + esc(b.Dimension)
}

func (o ReadOptions) query() url.Values {
	q := url.Values{}
	if o.Consistency != "" {
		q.Set("consistency", o.Consistency)
	}
	if o.AllowPartial {
		q.Set("partial", "allow")
	}
	if o.Profiles {
		q.Set("profiles", "1")
	}
	return q
}

// Writes.

// PostEvent applies one event. Retried: the gateway dedupes by EventID, so
// a retry of an event that was applied answers Duplicate: true.
func (c *Client) PostEvent(ctx context.Context, ev Event) (EventResult, error) {
	if ev.EventID == "" {
		return EventResult{}, errors.New("rankgate: an event needs an EventID (it makes retries safe)")
	}
	var out EventResult
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/events", body: ev, idempotent: true}, &out)
	return out, err
}

// PostEvents applies a batch in order. Retried as a whole (every event keeps
// its id). Each item of the answer is a result or an error.
func (c *Client) PostEvents(ctx context.Context, evs []Event) ([]BatchItem, error) {
	for i, ev := range evs {
		if ev.EventID == "" {
			return nil, fmt.Errorf("rankgate: event %d has no EventID (it makes retries safe)", i)
		}
	}
	var out struct {
		Results []BatchItem `json:"results"`
	}
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/events:batch", body: map[string]any{"events": evs}, idempotent: true}, &out)
	return out.Results, err
}

// PostEventsJSON sends a batch whose events are already encoded (each one
// JSON object with its event_id); retried like PostEvents.
func (c *Client) PostEventsJSON(ctx context.Context, evs []json.RawMessage) ([]BatchItem, error) {
	var out struct {
		Results []BatchItem `json:"results"`
	}
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/events:batch", body: map[string]any{"events": evs}, idempotent: true}, &out)
	return out.Results, err
}

// Project sets a member's absolute total on a projection family's board.
// Retried: a version already applied answers Applied: false.
func (c *Client) Project(ctx context.Context, b Board, member string, p Projection) (ProjectionResult, error) {
	var out ProjectionResult
	err := c.do(ctx, call{method: http.MethodPut, path: b.path() + "/members/" + esc(member), body: p, idempotent: true}, &out)
	return out, err
}

// PutProfile stores a member's display data.
func (c *Client) PutProfile(ctx context.Context, member string, p Profile) error {
	return c.do(ctx, call{method: http.MethodPut, path: "/v1/profiles/" + esc(member), body: p, idempotent: true}, nil)
}

// Reads (all retried).

// Top returns the first limit entries of a board.
func (c *Client) Top(ctx context.Context, b Board, limit int, o ReadOptions) (Page, error) {
	q := o.query()
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out Page
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/top", query: q, idempotent: true}, &out)
	return out, err
}

// Member returns a member's standing; a member not on the board is an
// *Error with Code "not_ranked".
func (c *Client) Member(ctx context.Context, b Board, member string, o ReadOptions) (MemberStanding, error) {
	var out MemberStanding
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/members/" + esc(member), query: o.query(), idempotent: true}, &out)
	return out, err
}

// Around returns the entries within radius positions of a member.
func (c *Client) Around(ctx context.Context, b Board, member string, radius int, o ReadOptions) (Page, error) {
	q := o.query()
	q.Set("radius", strconv.Itoa(radius))
	var out Page
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/members/" + esc(member) + "/around", query: q, idempotent: true}, &out)
	return out, err
}

// Entries returns a page of a board; follow Page.NextCursor.
func (c *Client) Entries(ctx context.Context, b Board, pq PageQuery, o ReadOptions) (Page, error) {
	q := o.query()
	if pq.Limit > 0 {
		q.Set("limit", strconv.Itoa(pq.Limit))
	}
	if pq.Cursor != "" {
		q.Set("cursor", pq.Cursor)
	}
	if pq.HasOffset {
		q.Set("offset", strconv.Itoa(pq.Offset))
	}
	if pq.Snapshot != "" {
		q.Set("snapshot", pq.Snapshot)
	}
	var out Page
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/entries", query: q, idempotent: true}, &out)
	return out, err
}

// Lookup returns the entries of the given members, in board order (absent
// members left out). A POST that only reads: retried.
func (c *Client) Lookup(ctx context.Context, b Board, users []string, o ReadOptions) (Page, error) {
	var out Page
	err := c.do(ctx, call{method: http.MethodPost, path: b.path() + "/members:lookup", query: o.query(),
		body: map[string][]string{"users": users}, idempotent: true}, &out)
	return out, err
}

// Count returns the members with points in [min, max].
func (c *Client) Count(ctx context.Context, b Board, min, max int64, o ReadOptions) (Count, error) {
	q := o.query()
	q.Set("min", strconv.FormatInt(min, 10))
	q.Set("max", strconv.FormatInt(max, 10))
	var out Count
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/count", query: q, idempotent: true}, &out)
	return out, err
}

// Range returns entries with points in [min, max], in board order.
func (c *Client) Range(ctx context.Context, b Board, min, max int64, limit int, cursor string, o ReadOptions) (Page, error) {
	q := o.query()
	q.Set("min", strconv.FormatInt(min, 10))
	q.Set("max", strconv.FormatInt(max, 10))
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out Page
	err := c.do(ctx, call{method: http.MethodGet, path: b.path() + "/range", query: q, idempotent: true}, &out)
	return out, err
}

// CreateSnapshot freezes the top depth entries for paging (sent once).
func (c *Client) CreateSnapshot(ctx context.Context, b Board, depth, ttlSeconds int) (SnapshotInfo, error) {
	var out SnapshotInfo
	err := c.do(ctx, call{method: http.MethodPost, path: b.path() + "/snapshots",
		body: map[string]int{"depth": depth, "ttl_seconds": ttlSeconds}, want: http.StatusCreated}, &out)
	return out, err
}

// Boards lists the boards of a period with member counts.
func (c *Client) Boards(ctx context.Context, family, period string) (BoardList, error) {
	var out BoardList
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/boards/" + esc(family) + "/" + esc(period), idempotent: true}, &out)
	return out, err
}

// Period returns the period of a family at a time (zero: now).
func (c *Client) Period(ctx context.Context, family string, at time.Time) (PeriodInfo, error) {
	q := url.Values{}
	if !at.IsZero() {
		q.Set("at", at.Format(time.RFC3339Nano))
	}
	var out PeriodInfo
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/families/" + esc(family) + "/period", query: q, idempotent: true}, &out)
	return out, err
}

// Families lists the configured families.
func (c *Client) Families(ctx context.Context) ([]FamilyInfo, error) {
	var out wire.FamilyList
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/families", idempotent: true}, &out)
	return out.Families, err
}

// Ticket is a single-use stand-in for the client's token on a live board
// (POST /v1/tickets): pass Ticket as ?ticket= to an EventSource.
type Ticket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

// NewTicket asks for a ticket. Not retried: a lost answer leaves a ticket
// nobody holds, and a new call is as good.
func (c *Client) NewTicket(ctx context.Context) (Ticket, error) {
	var out Ticket
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/tickets", want: http.StatusCreated}, &out)
	return out, err
}

// Administration.

// PeriodDetail returns a period's state, boards and mode.
func (c *Client) PeriodDetail(ctx context.Context, family, period string) (PeriodDetail, error) {
	var out PeriodDetail
	err := c.do(ctx, call{method: http.MethodGet, path: periodPath(family, period), idempotent: true}, &out)
	return out, err
}

// Freeze freezes a period (freezing a frozen period changes nothing: retried).
func (c *Client) Freeze(ctx context.Context, family, period string) (PeriodDetail, error) {
	var out PeriodDetail
	err := c.do(ctx, call{method: http.MethodPost, path: periodPath(family, period) + "/freeze", idempotent: true}, &out)
	return out, err
}

// Settle settles a period (idempotent on the server: retried).
func (c *Client) Settle(ctx context.Context, family, period string, top int) (Settlement, error) {
	var out Settlement
	err := c.do(ctx, call{method: http.MethodPost, path: periodPath(family, period) + "/settle",
		body: map[string]int{"top": top}, idempotent: true}, &out)
	return out, err
}

// Settlement returns the saved standings and the award outbox.
func (c *Client) Settlement(ctx context.Context, family, period string) (Settlement, error) {
	var out Settlement
	err := c.do(ctx, call{method: http.MethodGet, path: periodPath(family, period) + "/settlement", idempotent: true}, &out)
	return out, err
}

// Archive archives a settled period (sent once).
func (c *Client) Archive(ctx context.Context, family, period string) (PeriodDetail, error) {
	var out PeriodDetail
	err := c.do(ctx, call{method: http.MethodPost, path: periodPath(family, period) + "/archive"}, &out)
	return out, err
}

// Derive recomputes a derived family's boards for a period (sent once).
func (c *Client) Derive(ctx context.Context, family, period string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, call{method: http.MethodPost, path: periodPath(family, period) + "/derive"}, &out)
	return out, err
}

// Correct applies an audited correction; retried (deduped by CorrectionID).
func (c *Client) Correct(ctx context.Context, cr Correction) (EventResult, error) {
	if cr.CorrectionID == "" {
		return EventResult{}, errors.New("rankgate: a correction needs a CorrectionID (it makes retries safe)")
	}
	var out EventResult
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/corrections", body: cr, idempotent: true}, &out)
	return out, err
}

// Reviews lists the events kept for review (period "" is current).
func (c *Client) Reviews(ctx context.Context, family, period string, limit int) (json.RawMessage, error) {
	q := url.Values{"family": {family}}
	if period != "" {
		q.Set("period", period)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out json.RawMessage
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/reviews", query: q, idempotent: true}, &out)
	return out, err
}

// DecideReview accepts or rejects a kept event (sent once).
func (c *Client) DecideReview(ctx context.Context, id, family, period, operator string, accept bool) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/reviews/" + esc(id) + "/decision",
		body: map[string]any{"family": family, "period": period, "operator": operator, "accept": accept}}, &out)
	return out, err
}

// Ready reports whether the gateway is ready (GET /readyz); not retried.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/readyz"}, nil)
}

func periodPath(family, period string) string {
	return "/v1/periods/" + esc(family) + "/" + esc(period)
}

// Awards lists awards with their delivery state (ledger mode); the raw
// answer ({"awards": [...], "next_after"}).
func (c *Client) Awards(ctx context.Context, family, period, state, after string, limit int) (json.RawMessage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"family": family, "period": period, "state": state, "after": after} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out json.RawMessage
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/awards", query: q, idempotent: true}, &out)
	return out, err
}

// AckAward marks an award delivered (idempotent: retried).
func (c *Client) AckAward(ctx context.Context, key string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/awards/" + esc(key) + "/ack", idempotent: true}, &out)
	return out, err
}

package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/rank"
)

// Writes.

func (s *server) event(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(w, r)
	if err != nil {
		return err
	}
	ev, err := decodeEvent(data, "")
	if err != nil {
		return err
	}
	if err := s.checkPlayer(r, ev); err != nil {
		return err
	}
	res, err := s.writes.ApplyEvent(r.Context(), ev)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, eventResult(res))
}

type batchRequest struct {
	Events []json.RawMessage `json:"events"`
}

type batchResponse struct {
	Results []any `json:"results"`
}

func (s *server) batch(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(w, r)
	if err != nil {
		return err
	}
	evs, err := decodeBatch(data)
	if err != nil {
		return err
	}
	items, err := s.writes.ApplyBatch(r.Context(), evs)
	if err != nil {
		return err
	}
	if len(items) != len(evs) {
		return fmt.Errorf("batch of %d events answered with %d items", len(evs), len(items))
	}
	out := batchResponse{Results: make([]any, len(items))}
	for i, it := range items {
		switch {
		case it.Err != nil:
			out.Results[i] = errorEnvelope{Error: s.public(r, it.Err)}
		case it.Result != nil:
			out.Results[i] = eventResult(*it.Result)
		default:
			out.Results[i] = errorEnvelope{Error: s.public(r, fmt.Errorf("batch item %d has neither result nor error", i))}
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// decodeBatch decodes a batch's events: the common shape in one pass
// (fastjson.go), anything else through the strict decoder, event by event.
func decodeBatch(data []byte) ([]gateway.Event, error) {
	if ws, ok := fastBatch(data); ok {
		evs := make([]gateway.Event, len(ws))
		for i := range ws {
			ev, ok := eventOf(ws[i])
			if !ok {
				return nil, badAt("events["+strconv.Itoa(i)+"]", *ws[i].At)
			}
			evs[i] = ev
		}
		return evs, nil
	}
	var req batchRequest
	if err := decodeValue(data, "", &req); err != nil {
		return nil, err
	}
	evs := make([]gateway.Event, len(req.Events))
	for i, raw := range req.Events {
		ev, err := decodeEvent(raw, "events["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return evs, nil
}

func eventResult(res gateway.EventResult) gateway.EventResult {
	if res.Boards == nil {
		res.Boards = []gateway.BoardPoints{}
	}
	return res
}

func (s *server) project(w http.ResponseWriter, r *http.Request) error {
	var p gateway.Projection
	if err := decodeBody(w, r, &p); err != nil {
		return err
	}
	res, err := s.writes.Project(r.Context(), boardOf(r), r.PathValue("member"), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

type profileResponse struct {
	User    string          `json:"user"`
	Profile gateway.Profile `json:"profile"`
}

func (s *server) putProfile(w http.ResponseWriter, r *http.Request) error {
	var p gateway.Profile
	if err := decodeBody(w, r, &p); err != nil {
		return err
	}
	user := r.PathValue("member")
	if err := s.writes.PutProfile(r.Context(), user, p); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, profileResponse{User: user, Profile: p})
}

// Reads.

func (s *server) top(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	limit := q.int("limit", defaultTopLimit)
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	page, err := s.reads.Top(r.Context(), boardOf(r), limit, o)
	if err != nil {
		return err
	}
	return writePage(w, page)
}

func (s *server) member(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	m, err := s.reads.Member(r.Context(), boardOf(r), r.PathValue("member"), o)
	if err != nil {
		return err
	}
	return writeRead(w, m.ReadMeta, m)
}

func (s *server) around(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	radius := q.int("radius", defaultRadius)
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	page, err := s.reads.Around(r.Context(), boardOf(r), r.PathValue("member"), radius, o)
	if err != nil {
		return err
	}
	return writePage(w, page)
}

func (s *server) entries(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	pq := gateway.PageQuery{Limit: q.int("limit", defaultEntriesLimit)}
	pq.Cursor, _ = q.str("cursor")
	pq.Snapshot, _ = q.str("snapshot")
	if _, ok := q.str("offset"); ok {
		pq.Offset, pq.HasOffset = q.int("offset", 0), true
	}
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	switch {
	case pq.Cursor != "" && pq.HasOffset:
		return rank.Invalid("offset", "cursor and offset are exclusive: a page is read by one or the other")
	case pq.Cursor != "" && pq.Snapshot != "":
		return rank.Invalid("cursor", "snapshot pages are read by offset, not cursor")
	}
	page, err := s.reads.Entries(r.Context(), boardOf(r), pq, o)
	if err != nil {
		return err
	}
	return writePage(w, page)
}

type lookupRequest struct {
	Users []string `json:"users"`
}

func (s *server) lookup(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	var req lookupRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	page, err := s.reads.Lookup(r.Context(), boardOf(r), req.Users, o)
	if err != nil {
		return err
	}
	return writePage(w, page)
}

func (s *server) count(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	lo := q.int64("min", -maxExact)
	hi := q.int64("max", maxExact)
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	c, err := s.reads.Count(r.Context(), boardOf(r), lo, hi, o)
	if err != nil {
		return err
	}
	return writeRead(w, c.ReadMeta, c)
}

func (s *server) rangeQuery(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	rq := gateway.RangeQuery{
		Min:   q.int64("min", -maxExact),
		Max:   q.int64("max", maxExact),
		Limit: q.int("limit", defaultRangeLimit),
	}
	rq.Cursor, _ = q.str("cursor")
	o := q.readOptions()
	if q.err != nil {
		return q.err
	}
	page, err := s.reads.Range(r.Context(), boardOf(r), rq, o)
	if err != nil {
		return err
	}
	return writePage(w, page)
}

func (s *server) period(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	at := q.time("at")
	if q.err != nil {
		return q.err
	}
	if _, given := q.str("at"); given && (at.Year() < 1970 || at.Year() > 9998) {
		return rank.Invalid("at", "at must lie within the years 1970..9998")
	}
	info, err := s.reads.Period(r.Context(), r.PathValue("family"), at)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, info)
}

func writePage(w http.ResponseWriter, p gateway.Page) error {
	body, length, ok, err := p.HitJSON()
	if ok {
		// A cache hit: bytes encoded once per cached value, written as they
		// are, with header values shared by every hit (nothing allocated).
		if err != nil {
			return fmt.Errorf("encoding %T response: %w", p, err)
		}
		h := w.Header()
		h["Content-Type"] = jsonContentType
		h["Content-Length"] = length
		h["Cache-Control"] = cacheControlValue(p.ReadMeta)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body) // a client that went away is not our error
		return nil
	}
	if p.Entries == nil {
		p.Entries = []rank.Entry{}
	}
	return writeRead(w, p.ReadMeta, p)
}

// writeRead answers a read, cacheable by clients only when the gateway
// served it from its cache, and for no longer than the cache keeps it.
func writeRead(w http.ResponseWriter, meta gateway.ReadMeta, v any) error {
	w.Header()["Cache-Control"] = cacheControlValue(meta)
	return writeJSON(w, http.StatusOK, v)
}

// jsonContentType is the Content-Type header value of JSON answers, shared
// (a header's value slices are only read once set; Add would copy it).
var jsonContentType = []string{"application/json"}

// Shared Cache-Control header values: no-store, and max-age for up to
// maxAgeShared seconds.
const maxAgeShared = 300

var (
	noStore     = []string{"no-store"}
	maxAgeValue = func() [][]string {
		v := make([][]string, maxAgeShared+1)
		for i := range v {
			v[i] = []string{"max-age=" + strconv.Itoa(i)}
		}
		return v
	}()
)

// cacheControlValue is the Cache-Control header value of a read (shared:
// not to be modified).
func cacheControlValue(m gateway.ReadMeta) []string {
	if m.Source != gateway.SourceCache || m.MaxAge <= 0 || m.Partial {
		return noStore
	}
	secs := int64((m.MaxAge + time.Second - 1) / time.Second)
	if secs <= maxAgeShared {
		return maxAgeValue[secs]
	}
	return []string{"max-age=" + strconv.FormatInt(secs, 10)}
}

// Service endpoints.

type statusBody struct {
	Status string `json:"status"`
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

// readyz is 200 when the gateway can serve, else 503 unavailable, whatever
// the code of the failure.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	err := s.ready(r.Context())
	if err == nil {
		return writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
	}
	s.log.WarnContext(r.Context(), "not ready", attrs(r, err)...)
	msg := "not ready"
	var e *rank.Error
	if errors.As(err, &e) && statusOf(e.Code) != http.StatusInternalServerError {
		msg = "not ready: " + e.Message
	}
	writeErrorBody(w, errorBody{Code: rank.CodeUnavailable, Message: msg})
	return nil
}

type snapshotRequest struct {
	Depth      *int `json:"depth"`
	TTLSeconds *int `json:"ttl_seconds"`
}

// Snapshot defaults when the body leaves them out.
const (
	defaultSnapshotDepth = 1000
	defaultSnapshotTTL   = 60
)

func (s *server) snapshot(w http.ResponseWriter, r *http.Request) error {
	var req snapshotRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	depth, ttl := defaultSnapshotDepth, defaultSnapshotTTL
	if req.Depth != nil {
		depth = *req.Depth
	}
	if req.TTLSeconds != nil {
		ttl = *req.TTLSeconds
	}
	if ttl < 1 || ttl > 600 {
		return rank.Invalid("ttl_seconds", "ttl_seconds must be within 1..600")
	}
	res, err := s.life.CreateSnapshot(r.Context(), boardOf(r), depth, time.Duration(ttl)*time.Second)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, res)
}

func (s *server) boards(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.Boards(r.Context(), r.PathValue("family"), r.PathValue("period"))
	if err != nil {
		return err
	}
	return writeRead(w, res.ReadMeta, res)
}

func (s *server) layout(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	family, _ := q.str("family")
	period, _ := q.str("period")
	if q.err != nil {
		return q.err
	}
	res, err := s.life.Layout(r.Context(), family, period)
	if err != nil {
		return err
	}
	return writeRead(w, res.ReadMeta, res)
}

func (s *server) periodDetail(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.PeriodDetail(r.Context(), r.PathValue("family"), r.PathValue("period"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) freeze(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.Freeze(r.Context(), r.PathValue("family"), r.PathValue("period"))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionPeriodFreeze, Target: "period:" + res.Family + "/" + res.Period})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) reviews(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	family, _ := q.str("family")
	period, _ := q.str("period")
	limit := q.int("limit", 100)
	if q.err != nil {
		return q.err
	}
	if family == "" {
		return rank.Invalid("family", "family is required")
	}
	if period == "" {
		period = "current"
	}
	res, err := s.life.Reviews(r.Context(), family, period, limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

type settleRequest struct {
	Top *int `json:"top"`
}

func (s *server) settle(w http.ResponseWriter, r *http.Request) error {
	var req settleRequest
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &req); err != nil {
			return err
		}
	}
	top := 100
	if req.Top != nil {
		top = *req.Top
	}
	res, err := s.life.Settle(r.Context(), r.PathValue("family"), r.PathValue("period"), top)
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionPeriodSettle, Target: "period:" + res.Family + "/" + res.Period})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) settlement(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.SettlementOf(r.Context(), r.PathValue("family"), r.PathValue("period"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) archive(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.Archive(r.Context(), r.PathValue("family"), r.PathValue("period"))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionPeriodArchive, Target: "period:" + res.Family + "/" + res.Period})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) correct(w http.ResponseWriter, r *http.Request) error {
	var c gateway.Correction
	if err := decodeBody(w, r, &c); err != nil {
		return err
	}
	res, err := s.writes.Correct(r.Context(), c)
	if err != nil {
		return err
	}
	if !res.Duplicate { // a replayed correction changed nothing
		s.record(r, audit.Entry{Action: audit.ActionCorrection, DeclaredOperator: c.Operator, Reason: c.Reason,
			Target: "correction:" + c.CorrectionID + " period:" + c.Family + "/" + res.Period + " " + memberTarget(c.User)})
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) rebuild(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.Rebuild(r.Context(), boardOf(r))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionBoardRebuild, Target: "board:" + res.Board})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) reconcile(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.Reconcile(r.Context(), boardOf(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

type decisionRequest struct {
	Family   string `json:"family"`
	Period   string `json:"period"`
	Operator string `json:"operator"`
	Accept   *bool  `json:"accept"`
}

func (s *server) decideReview(w http.ResponseWriter, r *http.Request) error {
	var req decisionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Accept == nil {
		return rank.Invalid("accept", "accept (true or false) is required")
	}
	if req.Period == "" {
		req.Period = "current"
	}
	res, err := s.life.DecideReview(r.Context(), r.PathValue("id"), req.Family, req.Period, req.Operator, *req.Accept)
	if err != nil {
		return err
	}
	action := audit.ActionReviewReject
	if *req.Accept {
		action = audit.ActionReviewAccept
	}
	s.record(r, audit.Entry{Action: action, DeclaredOperator: req.Operator,
		Target: "review:" + r.PathValue("id") + " period:" + req.Family + "/" + req.Period})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) derive(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.Derive(r.Context(), r.PathValue("family"), r.PathValue("period"))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionPeriodDerive, Target: "period:" + res.Family + "/" + res.Period})
	return writeJSON(w, http.StatusOK, res)
}

// checkPlayer applies the rules of self-only writes when the event comes
// with a player token (Auth put its principal in the context); a static
// token or an open API passes.
func (s *server) checkPlayer(r *http.Request, ev gateway.Event) error {
	p, ok := PrincipalFrom(r.Context())
	if !ok || !p.Player {
		return nil
	}
	if s.players == nil {
		return rank.Errorf(rank.CodeForbidden, "this gateway takes no events from player tokens")
	}
	return s.players.CheckEvent(r.Context(), p.Member, player.Write{Family: ev.Family, User: ev.User, EventID: ev.EventID,
		Delta: ev.Delta, Value: ev.Value, Reverses: ev.Reverses})
}

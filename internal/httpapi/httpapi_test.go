package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// fakeService answers through its function fields; calling an unset one
// fails the test.
type fakeService struct {
	t          *testing.T
	applyEvent func(context.Context, gateway.Event) (gateway.EventResult, error)
	applyBatch func(context.Context, []gateway.Event) ([]gateway.BatchItem, error)
	project    func(context.Context, gateway.BoardRef, string, gateway.Projection) (gateway.ProjectionResult, error)
	putProfile func(context.Context, string, gateway.Profile) error
	top        func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error)
	member     func(context.Context, gateway.BoardRef, string, gateway.ReadOptions) (gateway.MemberStanding, error)
	around     func(context.Context, gateway.BoardRef, string, int, gateway.ReadOptions) (gateway.Page, error)
	entries    func(context.Context, gateway.BoardRef, gateway.PageQuery, gateway.ReadOptions) (gateway.Page, error)
	lookup     func(context.Context, gateway.BoardRef, []string, gateway.ReadOptions) (gateway.Page, error)
	count      func(context.Context, gateway.BoardRef, int64, int64, gateway.ReadOptions) (gateway.Count, error)
	rangeQ     func(context.Context, gateway.BoardRef, gateway.RangeQuery, gateway.ReadOptions) (gateway.Page, error)
	period     func(context.Context, string, time.Time) (gateway.PeriodInfo, error)
	ready      func(context.Context) error
	snapshot   func(context.Context, gateway.BoardRef, int, time.Duration) (gateway.SnapshotInfo, error)
	boards     func(context.Context, string, string) (gateway.BoardList, error)
	layout     func(context.Context, string, string) (gateway.Layout, error)
	detail     func(context.Context, string, string) (gateway.PeriodDetail, error)
	freeze     func(context.Context, string, string) (gateway.PeriodDetail, error)
	reviews    func(context.Context, string, string, int) (gateway.ReviewList, error)
	settle     func(context.Context, string, string, int) (gateway.SettlementView, error)
	createTour func(context.Context, competition.Tournament) (gateway.TournamentInfo, error)
	join       func(context.Context, string, string) (gateway.JoinResult, error)
}

var _ Service = (*fakeService)(nil)

var errUnexpected = errors.New("unexpected call")

func (f *fakeService) unexpected(name string) error {
	f.t.Errorf("unexpected call to %s", name)
	return errUnexpected
}

func (f *fakeService) ApplyEvent(ctx context.Context, ev gateway.Event) (gateway.EventResult, error) {
	if f.applyEvent == nil {
		return gateway.EventResult{}, f.unexpected("ApplyEvent")
	}
	return f.applyEvent(ctx, ev)
}

func (f *fakeService) ApplyBatch(ctx context.Context, evs []gateway.Event) ([]gateway.BatchItem, error) {
	if f.applyBatch == nil {
		return nil, f.unexpected("ApplyBatch")
	}
	return f.applyBatch(ctx, evs)
}

func (f *fakeService) Project(ctx context.Context, b gateway.BoardRef, user string, p gateway.Projection) (gateway.ProjectionResult, error) {
	if f.project == nil {
		return gateway.ProjectionResult{}, f.unexpected("Project")
	}
	return f.project(ctx, b, user, p)
}

func (f *fakeService) PutProfile(ctx context.Context, user string, p gateway.Profile) error {
	if f.putProfile == nil {
		return f.unexpected("PutProfile")
	}
	return f.putProfile(ctx, user, p)
}

func (f *fakeService) Top(ctx context.Context, b gateway.BoardRef, limit int, o gateway.ReadOptions) (gateway.Page, error) {
	if f.top == nil {
		return gateway.Page{}, f.unexpected("Top")
	}
	return f.top(ctx, b, limit, o)
}

func (f *fakeService) Member(ctx context.Context, b gateway.BoardRef, user string, o gateway.ReadOptions) (gateway.MemberStanding, error) {
	if f.member == nil {
		return gateway.MemberStanding{}, f.unexpected("Member")
	}
	return f.member(ctx, b, user, o)
}

func (f *fakeService) Around(ctx context.Context, b gateway.BoardRef, user string, radius int, o gateway.ReadOptions) (gateway.Page, error) {
	if f.around == nil {
		return gateway.Page{}, f.unexpected("Around")
	}
	return f.around(ctx, b, user, radius, o)
}

func (f *fakeService) Entries(ctx context.Context, b gateway.BoardRef, q gateway.PageQuery, o gateway.ReadOptions) (gateway.Page, error) {
	if f.entries == nil {
		return gateway.Page{}, f.unexpected("Entries")
	}
	return f.entries(ctx, b, q, o)
}

func (f *fakeService) Lookup(ctx context.Context, b gateway.BoardRef, users []string, o gateway.ReadOptions) (gateway.Page, error) {
	if f.lookup == nil {
		return gateway.Page{}, f.unexpected("Lookup")
	}
	return f.lookup(ctx, b, users, o)
}

func (f *fakeService) Count(ctx context.Context, b gateway.BoardRef, min, max int64, o gateway.ReadOptions) (gateway.Count, error) {
	if f.count == nil {
		return gateway.Count{}, f.unexpected("Count")
	}
	return f.count(ctx, b, min, max, o)
}

func (f *fakeService) Range(ctx context.Context, b gateway.BoardRef, q gateway.RangeQuery, o gateway.ReadOptions) (gateway.Page, error) {
	if f.rangeQ == nil {
		return gateway.Page{}, f.unexpected("Range")
	}
	return f.rangeQ(ctx, b, q, o)
}

func (f *fakeService) Period(ctx context.Context, family string, at time.Time) (gateway.PeriodInfo, error) {
	if f.period == nil {
		return gateway.PeriodInfo{}, f.unexpected("Period")
	}
	return f.period(ctx, family, at)
}

func (f *fakeService) Ready(ctx context.Context) error {
	if f.ready == nil {
		return f.unexpected("Ready")
	}
	return f.ready(ctx)
}

func (f *fakeService) CreateSnapshot(ctx context.Context, b gateway.BoardRef, depth int, ttl time.Duration) (gateway.SnapshotInfo, error) {
	if f.snapshot == nil {
		return gateway.SnapshotInfo{}, f.unexpected("CreateSnapshot")
	}
	return f.snapshot(ctx, b, depth, ttl)
}

func (f *fakeService) Boards(ctx context.Context, family, period string) (gateway.BoardList, error) {
	if f.boards == nil {
		return gateway.BoardList{}, f.unexpected("Boards")
	}
	return f.boards(ctx, family, period)
}

func (f *fakeService) Layout(ctx context.Context, family, period string) (gateway.Layout, error) {
	if f.layout == nil {
		return gateway.Layout{}, f.unexpected("Layout")
	}
	return f.layout(ctx, family, period)
}

func (f *fakeService) PeriodDetail(ctx context.Context, family, period string) (gateway.PeriodDetail, error) {
	if f.detail == nil {
		return gateway.PeriodDetail{}, f.unexpected("PeriodDetail")
	}
	return f.detail(ctx, family, period)
}

func (f *fakeService) Freeze(ctx context.Context, family, period string) (gateway.PeriodDetail, error) {
	if f.freeze == nil {
		return gateway.PeriodDetail{}, f.unexpected("Freeze")
	}
	return f.freeze(ctx, family, period)
}

func (f *fakeService) Reviews(ctx context.Context, family, period string, limit int) (gateway.ReviewList, error) {
	if f.reviews == nil {
		return gateway.ReviewList{}, f.unexpected("Reviews")
	}
	return f.reviews(ctx, family, period, limit)
}

func (f *fakeService) Settle(ctx context.Context, family, period string, top int) (gateway.SettlementView, error) {
	if f.settle == nil {
		return gateway.SettlementView{}, f.unexpected("Settle")
	}
	return f.settle(ctx, family, period, top)
}

func (f *fakeService) SettlementOf(ctx context.Context, family, period string) (gateway.SettlementView, error) {
	return gateway.SettlementView{}, f.unexpected("SettlementOf")
}

func (f *fakeService) Archive(ctx context.Context, family, period string) (gateway.PeriodDetail, error) {
	return gateway.PeriodDetail{}, f.unexpected("Archive")
}

func (f *fakeService) Correct(ctx context.Context, c gateway.Correction) (gateway.EventResult, error) {
	return gateway.EventResult{}, f.unexpected("Correct")
}

func (f *fakeService) Rebuild(ctx context.Context, b gateway.BoardRef) (gateway.RebuildReport, error) {
	return gateway.RebuildReport{}, f.unexpected("Rebuild")
}

func (f *fakeService) Reconcile(ctx context.Context, b gateway.BoardRef) (gateway.ReconcileReport, error) {
	return gateway.ReconcileReport{}, f.unexpected("Reconcile")
}

func (f *fakeService) DecideReview(ctx context.Context, id, family, period, operator string, accept bool) (gateway.ReviewDecision, error) {
	return gateway.ReviewDecision{}, f.unexpected("DecideReview")
}

func (f *fakeService) Derive(ctx context.Context, family, period string) (gateway.DeriveReport, error) {
	return gateway.DeriveReport{}, f.unexpected("Derive")
}

func (f *fakeService) Awards(ctx context.Context, q gateway.AwardQuery) (gateway.AwardList, error) {
	return gateway.AwardList{}, f.unexpected("Awards")
}

func (f *fakeService) AckAward(ctx context.Context, key string) (gateway.AwardView, error) {
	return gateway.AwardView{}, f.unexpected("AckAward")
}

func (f *fakeService) RetryAward(ctx context.Context, key string) (gateway.AwardView, error) {
	return gateway.AwardView{}, f.unexpected("RetryAward")
}

// Fixtures.

var (
	asOf    = time.Date(2026, 8, 20, 2, 0, 0, 0, time.UTC)
	natRef  = gateway.BoardRef{Family: "learning", Period: "current", Dimension: "national"}
	provRef = gateway.BoardRef{Family: "learning", Period: "2026-W34", Dimension: "province:zhejiang"}
	natPath = "/v1/boards/learning/current/national"
)

func meta(src gateway.Source, maxAge time.Duration) gateway.ReadMeta {
	return gateway.ReadMeta{Board: "learning/2026-W34/national", Source: src, AsOf: asOf, MaxAge: maxAge}
}

func samplePage(src gateway.Source, maxAge time.Duration) gateway.Page {
	return gateway.Page{ReadMeta: meta(src, maxAge), Entries: []rank.Entry{
		{User: "u1", Points: 1270, Position: 0, Rank: 1},
		{User: "u2", Points: 1250, Position: 1, Rank: 2},
	}}
}

const samplePageJSON = `{"board":"learning/2026-W34/national","source":"%s","as_of":"2026-08-20T02:00:00Z",
	"entries":[{"user":"u1","points":1270,"position":0,"rank":1},{"user":"u2","points":1250,"position":1,"rank":2}]}`

func pageJSON(src gateway.Source) string { return fmt.Sprintf(samplePageJSON, src) }

func i64(v int64) *int64 { return &v }

// check fails t when got differs from want.
func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

type harness struct {
	h   http.Handler // checked against api/openapi.yaml
	raw http.Handler
	reg *prometheus.Registry
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, svc *fakeService, auth func(http.Handler) http.Handler) *harness {
	t.Helper()
	svc.t = t
	reg := prometheus.NewRegistry()
	buf := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := New(svc, Options{Logger: logger, Registerer: reg, Gatherer: reg, Auth: auth})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{h: contractChecked(t, h), raw: h, reg: reg, log: buf}
}

func (hs *harness) do(method, target string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, body)
	rec := httptest.NewRecorder()
	hs.h.ServeHTTP(rec, req)
	return rec
}

func serve(t *testing.T, svc *fakeService, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	return newHarness(t, svc, nil).do(method, target, r)
}

// assertJSON compares a JSON body with want, ignoring formatting and key order.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body\n got: %s\nwant: %s", bytes.TrimSpace(got), want)
	}
}

type apiError struct {
	Error struct {
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Field   *string `json:"field"`
	} `json:"error"`
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) apiError {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var e apiError
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body: %v", err)
	}
	return e
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 8, 20, 10, 0, 0, 0, time.FixedZone("", 8*3600))
	yes := true
	tests := []struct {
		title      string
		method     string
		target     string
		body       string
		svc        func(t *testing.T) *fakeService
		wantStatus int
		wantBody   string
		wantCache  string
	}{
		{
			title:  "event",
			method: "POST", target: "/v1/events",
			body: `{"event_id":"evt-8842","family":"learning","user":"u1001","delta":20,
				"dims":{"province":"zhejiang","class":"c42"},"at":"2026-08-20T10:00:00+08:00"}`,
			svc: func(t *testing.T) *fakeService {
				return &fakeService{applyEvent: func(_ context.Context, ev gateway.Event) (gateway.EventResult, error) {
					check(t, "event", ev, gateway.Event{EventID: "evt-8842", Family: "learning", User: "u1001",
						Delta: i64(20), Dims: map[string]string{"province": "zhejiang", "class": "c42"}, At: ev.At})
					if ev.At == nil || !ev.At.Equal(at) {
						t.Errorf("at = %v, want %v", ev.At, at)
					}
					return gateway.EventResult{EventID: "evt-8842", Period: "2026-W34", Boards: []gateway.BoardPoints{
						{Board: "learning/2026-W34/national", Points: 1270}}}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"event_id":"evt-8842","duplicate":false,"period":"2026-W34","boards":[{"board":"learning/2026-W34/national","points":1270}]}`,
			wantCache:  "no-store",
		},
		{
			title:  "event reversal without at or delta",
			method: "POST", target: "/v1/events",
			body: `{"event_id":"evt-9001","family":"learning","user":"u1001","reverses":"evt-8842","reason":"fraud"}`,
			svc: func(t *testing.T) *fakeService {
				return &fakeService{applyEvent: func(_ context.Context, ev gateway.Event) (gateway.EventResult, error) {
					check(t, "event", ev, gateway.Event{EventID: "evt-9001", Family: "learning", User: "u1001",
						Reverses: "evt-8842", Reason: "fraud"})
					return gateway.EventResult{EventID: "evt-9001", Duplicate: true, Period: "2026-W34", Improved: &yes}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"event_id":"evt-9001","duplicate":true,"period":"2026-W34","boards":[],"improved":true}`,
		},
		{
			title:  "batch mixing results and errors",
			method: "POST", target: "/v1/events:batch",
			body: `{"events":[{"event_id":"a","family":"learning","user":"u1","delta":1},
				{"event_id":"b","family":"learning","user":"u2","value":7},
				{"event_id":"c","family":"learning","user":"u3","delta":-2},
				{"event_id":"d","family":"learning","user":"u4","delta":3}]}`,
			svc: func(t *testing.T) *fakeService {
				return &fakeService{applyBatch: func(_ context.Context, evs []gateway.Event) ([]gateway.BatchItem, error) {
					check(t, "events", evs, []gateway.Event{
						{EventID: "a", Family: "learning", User: "u1", Delta: i64(1)},
						{EventID: "b", Family: "learning", User: "u2", Value: i64(7)},
						{EventID: "c", Family: "learning", User: "u3", Delta: i64(-2)},
						{EventID: "d", Family: "learning", User: "u4", Delta: i64(3)},
					})
					return []gateway.BatchItem{
						{Result: &gateway.EventResult{EventID: "a", Period: "2026-W34", Boards: []gateway.BoardPoints{{Board: "learning/2026-W34/national", Points: 1}}}},
						{Err: &rank.Error{Code: rank.CodePeriodClosed, Message: "period 2026-W33 is frozen"}},
						{Err: errors.New("redis: secret detail")},
						{Err: rank.Invalid("delta", "delta must not be zero")},
					}, nil
				}}
			},
			wantStatus: 200,
			wantBody: `{"results":[
				{"event_id":"a","duplicate":false,"period":"2026-W34","boards":[{"board":"learning/2026-W34/national","points":1}]},
				{"error":{"code":"period_closed","message":"period 2026-W33 is frozen"}},
				{"error":{"code":"internal","message":"internal error"}},
				{"error":{"code":"invalid_argument","message":"delta must not be zero","field":"delta"}}]}`,
		},
		{
			title:  "projection",
			method: "PUT", target: "/v1/boards/learning/2026-W34/province:zhejiang/members/u1001",
			body: `{"version":37,"points":1250}`,
			svc: func(t *testing.T) *fakeService {
				return &fakeService{project: func(_ context.Context, b gateway.BoardRef, user string, p gateway.Projection) (gateway.ProjectionResult, error) {
					check(t, "board", b, provRef)
					check(t, "user", user, "u1001")
					check(t, "projection", p, gateway.Projection{Version: 37, Points: 1250})
					return gateway.ProjectionResult{Applied: true, Version: 37, Points: 1250, Board: "learning/2026-W34/province:zhejiang"}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"applied":true,"version":37,"points":1250,"board":"learning/2026-W34/province:zhejiang"}`,
		},
		{
			title:  "profile",
			method: "PUT", target: "/v1/profiles/u1001",
			body: `{"name":"Ada","avatar":"https://img/a.png"}`,
			svc: func(t *testing.T) *fakeService {
				return &fakeService{putProfile: func(_ context.Context, user string, p gateway.Profile) error {
					check(t, "user", user, "u1001")
					check(t, "profile", p, gateway.Profile{Name: "Ada", Avatar: "https://img/a.png"})
					return nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"user":"u1001","profile":{"name":"Ada","avatar":"https://img/a.png"}}`,
		},
		{
			title:  "top defaults, cached answer is cacheable",
			method: "GET", target: "/v1/boards/learning/2026-W34/province:zhejiang/top",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{top: func(_ context.Context, b gateway.BoardRef, limit int, o gateway.ReadOptions) (gateway.Page, error) {
					check(t, "board", b, provRef)
					check(t, "limit", limit, 10)
					check(t, "options", o, gateway.ReadOptions{})
					return samplePage(gateway.SourceCache, 1500*time.Millisecond), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("cache"),
			wantCache:  "max-age=2",
		},
		{
			title:  "top with every read option, primary answer is not cacheable",
			method: "GET", target: natPath + "/top?limit=5&consistency=primary&partial=allow&profiles=1&unknown=x",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{top: func(_ context.Context, b gateway.BoardRef, limit int, o gateway.ReadOptions) (gateway.Page, error) {
					check(t, "board", b, natRef)
					check(t, "limit", limit, 5)
					check(t, "options", o, gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary, AllowPartial: true, Profiles: true})
					return samplePage(gateway.SourcePrimary, time.Second), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
			wantCache:  "no-store",
		},
		{
			title:  "top empty board answers an empty list",
			method: "GET", target: natPath + "/top?consistency=replica&profiles=0",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{top: func(_ context.Context, _ gateway.BoardRef, _ int, o gateway.ReadOptions) (gateway.Page, error) {
					check(t, "options", o, gateway.ReadOptions{Consistency: gateway.ConsistencyReplica})
					return gateway.Page{ReadMeta: meta(gateway.SourceReplica, 0)}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"board":"learning/2026-W34/national","source":"replica","as_of":"2026-08-20T02:00:00Z","entries":[]}`,
			wantCache:  "no-store",
		},
		{
			title:  "partial cached answer is not cacheable",
			method: "GET", target: natPath + "/top?partial=allow",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
					p := gateway.Page{ReadMeta: meta(gateway.SourceCache, time.Second)}
					p.Partial, p.MissingShards = true, []int{3}
					return p, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"board":"learning/2026-W34/national","source":"cache","as_of":"2026-08-20T02:00:00Z","partial":true,"missing_shards":[3],"entries":[]}`,
			wantCache:  "no-store",
		},
		{
			title:  "member",
			method: "GET", target: natPath + "/members/u1001",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{member: func(_ context.Context, b gateway.BoardRef, user string, o gateway.ReadOptions) (gateway.MemberStanding, error) {
					check(t, "board", b, natRef)
					check(t, "user", user, "u1001")
					check(t, "options", o, gateway.ReadOptions{})
					return gateway.MemberStanding{ReadMeta: meta(gateway.SourcePrimary, 0), User: "u1001", Points: 1250,
						Position: 2, Rank: 3, Members: 10, Percentile: 70}, nil
				}}
			},
			wantStatus: 200,
			wantBody: `{"board":"learning/2026-W34/national","source":"primary","as_of":"2026-08-20T02:00:00Z",
				"user":"u1001","points":1250,"position":2,"rank":3,"members":10,"percentile":70}`,
			wantCache: "no-store",
		},
		{
			title:  "around default radius",
			method: "GET", target: natPath + "/members/u1.x@y-z/around",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{around: func(_ context.Context, b gateway.BoardRef, user string, radius int, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "board", b, natRef)
					check(t, "user", user, "u1.x@y-z")
					check(t, "radius", radius, 2)
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "around radius 0",
			method: "GET", target: natPath + "/members/u1/around?radius=0",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{around: func(_ context.Context, _ gateway.BoardRef, _ string, radius int, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "radius", radius, 0)
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "entries defaults",
			method: "GET", target: natPath + "/entries",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{entries: func(_ context.Context, b gateway.BoardRef, q gateway.PageQuery, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "board", b, natRef)
					check(t, "query", q, gateway.PageQuery{Limit: 50})
					p := samplePage(gateway.SourceCache, time.Second)
					p.NextCursor = "next"
					return p, nil
				}}
			},
			wantStatus: 200,
			wantBody: `{"board":"learning/2026-W34/national","source":"cache","as_of":"2026-08-20T02:00:00Z",
				"entries":[{"user":"u1","points":1270,"position":0,"rank":1},{"user":"u2","points":1250,"position":1,"rank":2}],
				"next_cursor":"next"}`,
			wantCache: "max-age=1",
		},
		{
			title:  "entries by cursor",
			method: "GET", target: natPath + "/entries?limit=20&cursor=abc%2B%3D",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{entries: func(_ context.Context, _ gateway.BoardRef, q gateway.PageQuery, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "query", q, gateway.PageQuery{Limit: 20, Cursor: "abc+="})
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "entries by offset",
			method: "GET", target: natPath + "/entries?offset=100",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{entries: func(_ context.Context, _ gateway.BoardRef, q gateway.PageQuery, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "query", q, gateway.PageQuery{Limit: 50, Offset: 100, HasOffset: true})
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "entries from a snapshot at offset 0",
			method: "GET", target: natPath + "/entries?snapshot=s1&offset=0&limit=10",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{entries: func(_ context.Context, _ gateway.BoardRef, q gateway.PageQuery, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "query", q, gateway.PageQuery{Limit: 10, HasOffset: true, Snapshot: "s1"})
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "lookup",
			method: "POST", target: natPath + "/members:lookup?profiles=1",
			body: `{"users":["u2","u1","u9"]}`,
			svc: func(t *testing.T) *fakeService {
				return &fakeService{lookup: func(_ context.Context, b gateway.BoardRef, users []string, o gateway.ReadOptions) (gateway.Page, error) {
					check(t, "board", b, natRef)
					check(t, "users", users, []string{"u2", "u1", "u9"})
					check(t, "options", o, gateway.ReadOptions{Profiles: true})
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "count defaults to every exact score",
			method: "GET", target: natPath + "/count",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{count: func(_ context.Context, b gateway.BoardRef, lo, hi int64, _ gateway.ReadOptions) (gateway.Count, error) {
					check(t, "board", b, natRef)
					check(t, "min", lo, -(int64(1)<<53 - 1))
					check(t, "max", hi, int64(1)<<53-1)
					return gateway.Count{ReadMeta: meta(gateway.SourceCache, 900*time.Millisecond), Count: 42}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"board":"learning/2026-W34/national","source":"cache","as_of":"2026-08-20T02:00:00Z","count":42}`,
			wantCache:  "max-age=1",
		},
		{
			title:  "count band",
			method: "GET", target: natPath + "/count?min=-90&max=100",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{count: func(_ context.Context, _ gateway.BoardRef, lo, hi int64, _ gateway.ReadOptions) (gateway.Count, error) {
					check(t, "band", [2]int64{lo, hi}, [2]int64{-90, 100})
					return gateway.Count{ReadMeta: meta(gateway.SourcePrimary, 0), Count: 7}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"board":"learning/2026-W34/national","source":"primary","as_of":"2026-08-20T02:00:00Z","count":7}`,
		},
		{
			title:  "range",
			method: "GET", target: natPath + "/range?min=80&max=100&cursor=C",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{rangeQ: func(_ context.Context, b gateway.BoardRef, q gateway.RangeQuery, _ gateway.ReadOptions) (gateway.Page, error) {
					check(t, "board", b, natRef)
					check(t, "query", q, gateway.RangeQuery{Min: 80, Max: 100, Limit: 50, Cursor: "C"})
					return samplePage(gateway.SourcePrimary, 0), nil
				}}
			},
			wantStatus: 200,
			wantBody:   pageJSON("primary"),
		},
		{
			title:  "period at a time",
			method: "GET", target: "/v1/families/learning/period?at=2026-12-31T23:00:00%2B08:00",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{period: func(_ context.Context, family string, at time.Time) (gateway.PeriodInfo, error) {
					check(t, "family", family, "learning")
					check(t, "at", at.UTC(), time.Date(2026, 12, 31, 15, 0, 0, 0, time.UTC))
					starts, ends := time.Date(2026, 12, 28, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC)
					return gateway.PeriodInfo{Family: "learning", Period: "2026-W53", Starts: &starts, Ends: &ends, State: "open"}, nil
				}}
			},
			wantStatus: 200,
			wantBody: `{"family":"learning","period":"2026-W53","starts":"2026-12-28T00:00:00Z",
				"ends":"2027-01-04T00:00:00Z","state":"open"}`,
			wantCache: "no-store",
		},
		{
			title:  "period with an unescaped plus in at",
			method: "GET", target: "/v1/families/learning/period?at=2026-12-31T23:00:00+08:00",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{period: func(_ context.Context, _ string, at time.Time) (gateway.PeriodInfo, error) {
					check(t, "at", at.UTC(), time.Date(2026, 12, 31, 15, 0, 0, 0, time.UTC))
					return gateway.PeriodInfo{Family: "learning", Period: "2026-W53", State: "open"}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"family":"learning","period":"2026-W53","state":"open"}`,
		},
		{
			title:  "period defaults to now (zero time)",
			method: "GET", target: "/v1/families/learning/period",
			svc: func(t *testing.T) *fakeService {
				return &fakeService{period: func(_ context.Context, _ string, at time.Time) (gateway.PeriodInfo, error) {
					if !at.IsZero() {
						t.Errorf("at = %v, want zero", at)
					}
					return gateway.PeriodInfo{Family: "learning", Period: "2026-W34", State: "open"}, nil
				}}
			},
			wantStatus: 200,
			wantBody:   `{"family":"learning","period":"2026-W34","state":"open"}`,
		},
		{
			title:  "healthz",
			method: "GET", target: "/healthz",
			svc:        func(*testing.T) *fakeService { return &fakeService{} },
			wantStatus: 200,
			wantBody:   `{"status":"ok"}`,
		},
		{
			title:  "readyz",
			method: "GET", target: "/readyz",
			svc: func(*testing.T) *fakeService {
				return &fakeService{ready: func(context.Context) error { return nil }}
			},
			wantStatus: 200,
			wantBody:   `{"status":"ok"}`,
		},
		{
			title:  "readyz not ready",
			method: "GET", target: "/readyz",
			svc: func(*testing.T) *fakeService {
				return &fakeService{ready: func(context.Context) error {
					return rank.Unavailable(errors.New("dial 10.0.0.7:7000: refused"), "slots 0-5460 not covered")
				}}
			},
			wantStatus: 503,
			wantBody:   `{"error":{"code":"unavailable","message":"not ready: slots 0-5460 not covered"}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			rec := serve(t, tc.svc(t), tc.method, tc.target, tc.body)
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tc.wantCache != "" {
				check(t, "Cache-Control", rec.Header().Get("Cache-Control"), tc.wantCache)
			}
			assertJSON(t, rec.Body.Bytes(), tc.wantBody)
		})
	}
}

// TestBadInput: every syntax error is a 400 (or 413) naming what is wrong,
// and the service is never called.
func TestBadInput(t *testing.T) {
	t.Parallel()
	huge := `{"event_id":"` + strings.Repeat("a", maxBody) + `"}` // > 1 MiB
	tests := []struct {
		title      string
		method     string
		target     string
		body       string
		wantStatus int
		wantCode   rank.Code
		wantField  string
	}{
		{"bad JSON", "POST", "/v1/events", `{"event_id":`, 400, rank.CodeInvalidArgument, ""},
		{"not JSON", "POST", "/v1/events", `event_id=1`, 400, rank.CodeInvalidArgument, ""},
		{"empty body", "POST", "/v1/events", ``, 400, rank.CodeInvalidArgument, ""},
		{"JSON array for an object", "POST", "/v1/events", `[1]`, 400, rank.CodeInvalidArgument, ""},
		{"unknown field", "POST", "/v1/events", `{"event_id":"e","foo":1}`, 400, rank.CodeInvalidArgument, "foo"},
		{"trailing garbage", "POST", "/v1/events", `{"event_id":"e"} x`, 400, rank.CodeInvalidArgument, ""},
		{"two JSON values", "POST", "/v1/events", `{"event_id":"e"}{"event_id":"f"}`, 400, rank.CodeInvalidArgument, ""},
		{"body over 1 MiB", "POST", "/v1/events", huge, 413, rank.CodeTooLarge, ""},
		{"fractional delta", "POST", "/v1/events", `{"event_id":"e","delta":1.5}`, 400, rank.CodeInvalidArgument, "delta"},
		{"exponent delta", "POST", "/v1/events", `{"event_id":"e","delta":1e3}`, 400, rank.CodeInvalidArgument, "delta"},
		{"delta beyond int64", "POST", "/v1/events", `{"event_id":"e","delta":9223372036854775808}`, 400, rank.CodeInvalidArgument, "delta"},
		{"NaN delta", "POST", "/v1/events", `{"event_id":"e","delta":NaN}`, 400, rank.CodeInvalidArgument, "delta"},
		{"-Infinity delta", "POST", "/v1/events", `{"dims":{"a":"b"},"delta":-Infinity}`, 400, rank.CodeInvalidArgument, "delta"},
		{"unquoted key", "POST", "/v1/events", `{"dims":{"a":"b",c:1}}`, 400, rank.CodeInvalidArgument, "dims"},
		{"body not an object", "POST", "/v1/events", `"evt"`, 400, rank.CodeInvalidArgument, ""},
		{"batch item NaN deep", "POST", "/v1/events:batch", `{"events":[{"delta":1},{"dims":{"a":"1","b":NaN}}]}`, 400, rank.CodeInvalidArgument, "events[1].dims.b"},
		{"batch item not an object", "POST", "/v1/events:batch", `{"events":[{},7]}`, 400, rank.CodeInvalidArgument, "events[1]"},
		{"batch trailing garbage", "POST", "/v1/events:batch", `{"events":[]}]`, 400, rank.CodeInvalidArgument, ""},
		{"string delta", "POST", "/v1/events", `{"event_id":"e","delta":"20"}`, 400, rank.CodeInvalidArgument, "delta"},
		{"fractional value", "POST", "/v1/events", `{"event_id":"e","value":0.1}`, 400, rank.CodeInvalidArgument, "value"},
		{"numeric dim", "POST", "/v1/events", `{"event_id":"e","dims":{"class":42}}`, 400, rank.CodeInvalidArgument, "dims"},
		{"bad at", "POST", "/v1/events", `{"event_id":"e","at":"yesterday"}`, 400, rank.CodeInvalidArgument, "at"},
		{"numeric at", "POST", "/v1/events", `{"event_id":"e","at":1755000000}`, 400, rank.CodeInvalidArgument, "at"},
		{"batch item fractional delta", "POST", "/v1/events:batch", `{"events":[{"event_id":"a","delta":1},{"event_id":"b","delta":2.5}]}`, 400, rank.CodeInvalidArgument, "events[1].delta"},
		{"batch item unknown field", "POST", "/v1/events:batch", `{"events":[{"event_id":"a","points":1}]}`, 400, rank.CodeInvalidArgument, "events[0].points"},
		{"batch item bad at", "POST", "/v1/events:batch", `{"events":[{},{},{"at":"x"}]}`, 400, rank.CodeInvalidArgument, "events[2].at"},
		{"batch unknown field", "POST", "/v1/events:batch", `{"evts":[]}`, 400, rank.CodeInvalidArgument, "evts"},
		{"projection fractional points", "PUT", natPath + "/members/u1", `{"version":1,"points":12.5}`, 400, rank.CodeInvalidArgument, "points"},
		{"projection unknown field", "PUT", natPath + "/members/u1", `{"version":1,"score":12}`, 400, rank.CodeInvalidArgument, "score"},
		{"profile unknown field", "PUT", "/v1/profiles/u1", `{"name":"a","age":3}`, 400, rank.CodeInvalidArgument, "age"},
		{"lookup users not strings", "POST", natPath + "/members:lookup", `{"users":[1,2]}`, 400, rank.CodeInvalidArgument, "users"},
		{"limit abc", "GET", natPath + "/top?limit=abc", "", 400, rank.CodeInvalidArgument, "limit"},
		{"limit fraction", "GET", natPath + "/top?limit=1.5", "", 400, rank.CodeInvalidArgument, "limit"},
		{"limit empty", "GET", natPath + "/top?limit=", "", 400, rank.CodeInvalidArgument, "limit"},
		{"limit beyond int", "GET", natPath + "/top?limit=99999999999999999999", "", 400, rank.CodeInvalidArgument, "limit"},
		{"limit twice", "GET", natPath + "/top?limit=1&limit=2", "", 400, rank.CodeInvalidArgument, "limit"},
		{"bad consistency", "GET", natPath + "/top?consistency=eventual", "", 400, rank.CodeInvalidArgument, "consistency"},
		{"bad partial", "GET", natPath + "/top?partial=yes", "", 400, rank.CodeInvalidArgument, "partial"},
		{"bad profiles", "GET", natPath + "/top?profiles=true", "", 400, rank.CodeInvalidArgument, "profiles"},
		{"malformed query", "GET", natPath + "/top?limit=%zz", "", 400, rank.CodeInvalidArgument, ""},
		{"bad radius", "GET", natPath + "/members/u1/around?radius=two", "", 400, rank.CodeInvalidArgument, "radius"},
		{"member bad consistency", "GET", natPath + "/members/u1?consistency=x", "", 400, rank.CodeInvalidArgument, "consistency"},
		{"cursor and offset", "GET", natPath + "/entries?cursor=C&offset=10", "", 400, rank.CodeInvalidArgument, "offset"},
		{"snapshot and cursor", "GET", natPath + "/entries?cursor=C&snapshot=s", "", 400, rank.CodeInvalidArgument, "cursor"},
		{"bad offset", "GET", natPath + "/entries?offset=1e2", "", 400, rank.CodeInvalidArgument, "offset"},
		{"bad count min", "GET", natPath + "/count?min=abc", "", 400, rank.CodeInvalidArgument, "min"},
		{"count max NaN", "GET", natPath + "/count?max=NaN", "", 400, rank.CodeInvalidArgument, "max"},
		{"bad range max", "GET", natPath + "/range?min=1&max=2.5", "", 400, rank.CodeInvalidArgument, "max"},
		{"bad period at", "GET", "/v1/families/learning/period?at=2026-08-20", "", 400, rank.CodeInvalidArgument, "at"},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			rec := serve(t, &fakeService{}, tc.method, tc.target, tc.body)
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			e := decodeError(t, rec)
			check(t, "code", rank.Code(e.Error.Code), tc.wantCode)
			field := ""
			if e.Error.Field != nil {
				field = *e.Error.Field
				if field == "" {
					t.Errorf(`"field" present but empty`)
				}
			}
			check(t, "field", field, tc.wantField)
			if e.Error.Message == "" {
				t.Errorf("empty message")
			}
		})
	}
}

// TestBodyLimitWithoutContentLength: the 1 MiB bound holds for a streamed
// body too, and exactly 1 MiB is accepted.
func TestBodyLimitWithoutContentLength(t *testing.T) {
	t.Parallel()
	pad := func(n int) string { // a valid event of exactly n bytes
		base := `{"event_id":"e","reason":""}`
		return base[:len(base)-2] + strings.Repeat("r", n-len(base)) + `"}`
	}
	tests := []struct {
		title      string
		size       int
		wantStatus int
	}{
		{"exactly 1 MiB", maxBody, 200},
		{"1 MiB + 1", maxBody + 1, 413},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			svc := &fakeService{applyEvent: func(context.Context, gateway.Event) (gateway.EventResult, error) {
				return gateway.EventResult{EventID: "e"}, nil
			}}
			// Padded events the fake accepts (the gateway would refuse them
			// for want of family and user): the body limit, not the contract.
			hs := newHarness(t, svc, nil)
			hs.h = hs.raw
			body := pad(tc.size)
			if len(body) != tc.size {
				t.Fatalf("body is %d bytes", len(body))
			}
			req := httptest.NewRequest("POST", "/v1/events", io.NopCloser(strings.NewReader(body)))
			req.ContentLength = -1
			rec := httptest.NewRecorder()
			hs.h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %.200s", rec.Code, tc.wantStatus, rec.Body)
			}
		})
	}
}

// TestErrorCodes: each code has its status; 500s never leak their cause.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	const secret = "redis 10.0.0.7:7000 password=hunter2"
	tests := []struct {
		title       string
		err         error
		wantStatus  int
		wantCode    rank.Code
		wantMessage string
		wantField   string
	}{
		{"invalid_argument", rank.Invalid("limit", "limit must be 1..1000"), 400, rank.CodeInvalidArgument, "limit must be 1..1000", "limit"},
		{"invalid_cursor", rank.Errorf(rank.CodeInvalidCursor, "bad cursor"), 400, rank.CodeInvalidCursor, "bad cursor", ""},
		{"offset_too_deep", rank.Errorf(rank.CodeOffsetTooDeep, "too deep"), 400, rank.CodeOffsetTooDeep, "too deep", ""},
		{"unauthenticated", rank.Errorf(rank.CodeUnauthenticated, "no token"), 401, rank.CodeUnauthenticated, "no token", ""},
		{"forbidden", rank.Errorf(rank.CodeForbidden, "scope"), 403, rank.CodeForbidden, "scope", ""},
		{"unknown_family", rank.Errorf(rank.CodeUnknownFamily, "no family x"), 404, rank.CodeUnknownFamily, "no family x", ""},
		{"unknown_board", rank.Errorf(rank.CodeUnknownBoard, "no board"), 404, rank.CodeUnknownBoard, "no board", ""},
		{"not_ranked", rank.Errorf(rank.CodeNotRanked, "absent"), 404, rank.CodeNotRanked, "absent", ""},
		{"unknown_event", rank.Errorf(rank.CodeUnknownEvent, "no event"), 404, rank.CodeUnknownEvent, "no event", ""},
		{"not_found", rank.Errorf(rank.CodeNotFound, "nothing"), 404, rank.CodeNotFound, "nothing", ""},
		{"period_closed", rank.Errorf(rank.CodePeriodClosed, "frozen"), 409, rank.CodePeriodClosed, "frozen", ""},
		{"wrong_source", rank.Errorf(rank.CodeWrongSource, "projection family"), 409, rank.CodeWrongSource, "projection family", ""},
		{"unknown_tournament", rank.Errorf(rank.CodeUnknownTournament, "no cup"), 404, rank.CodeUnknownTournament, "no cup", ""},
		{"already_exists", rank.Errorf(rank.CodeAlreadyExists, "taken"), 409, rank.CodeAlreadyExists, "taken", ""},
		{"tournament_full", rank.Errorf(rank.CodeTournamentFull, "full"), 409, rank.CodeTournamentFull, "full", ""},
		{"not_joined", rank.Errorf(rank.CodeNotJoined, "join first"), 409, rank.CodeNotJoined, "join first", ""},
		{"attempts_exhausted", rank.Errorf(rank.CodeAttemptsExhausted, "3 of 3"), 409, rank.CodeAttemptsExhausted, "3 of 3", ""},
		{"snapshot_expired", rank.Errorf(rank.CodeSnapshotExpired, "gone"), 410, rank.CodeSnapshotExpired, "gone", ""},
		{"ledger_required", rank.Errorf(rank.CodeLedgerRequired, "no ledger"), 412, rank.CodeLedgerRequired, "no ledger", ""},
		{"too_large", rank.Errorf(rank.CodeTooLarge, "big"), 413, rank.CodeTooLarge, "big", ""},
		{"out_of_range", &rank.Error{Code: rank.CodeOutOfRange, Message: "beyond max_points", Field: "delta"}, 422, rank.CodeOutOfRange, "beyond max_points", "delta"},
		{"unavailable hides its cause", rank.Unavailable(errors.New(secret), "shard 3 down"), 503, rank.CodeUnavailable, "shard 3 down", ""},
		{"internal", &rank.Error{Code: rank.CodeInternal, Message: secret}, 500, rank.CodeInternal, internalMessage, ""},
		{"unmapped code", &rank.Error{Code: "mystery", Message: secret}, 500, rank.CodeInternal, internalMessage, ""},
		{"plain error", errors.New(secret), 500, rank.CodeInternal, internalMessage, ""},
		{"wrapped rank error", fmt.Errorf("top: %w", rank.Errorf(rank.CodeUnknownBoard, "no board")), 404, rank.CodeUnknownBoard, "no board", ""},
		{"deadline", fmt.Errorf("seek: %w", context.DeadlineExceeded), 503, rank.CodeUnavailable, "deadline exceeded", ""},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			svc := &fakeService{top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
				return gateway.Page{}, tc.err
			}}
			// Every code through one route: the status map, not the
			// contract (GET …/top never answers 409), so unchecked.
			hs := newHarness(t, svc, nil)
			hs.h = hs.raw
			rec := hs.do("GET", natPath+"/top", nil)
			check(t, "status", rec.Code, tc.wantStatus)
			if strings.Contains(rec.Body.String(), "hunter2") {
				t.Errorf("body leaks the cause: %s", rec.Body)
			}
			e := decodeError(t, rec)
			check(t, "code", rank.Code(e.Error.Code), tc.wantCode)
			check(t, "message", e.Error.Message, tc.wantMessage)
			field := ""
			if e.Error.Field != nil {
				field = *e.Error.Field
			}
			check(t, "field", field, tc.wantField)
			retry := ""
			if tc.wantStatus == 503 {
				retry = "1"
			}
			check(t, "Retry-After", rec.Header().Get("Retry-After"), retry)
			check(t, "Cache-Control", rec.Header().Get("Cache-Control"), "no-store")
			if tc.wantStatus >= 500 && !strings.Contains(hs.log.String(), "hunter2") && strings.Contains(tc.err.Error(), "hunter2") {
				t.Errorf("the cause of a %d is not logged:\n%s", tc.wantStatus, hs.log)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title      string
		method     string
		target     string
		wantStatus int
		wantCode   rank.Code
		wantAllow  string
	}{
		{"unknown path", "GET", "/v1/nope", 404, rank.CodeNotFound, ""},
		{"root", "GET", "/", 404, rank.CodeNotFound, ""},
		{"board without a read", "GET", natPath, 404, rank.CodeNotFound, ""},
		{"unregistered admin path", "POST", "/v1/periods/learning/2026-W34/settle/now", 404, rank.CodeNotFound, ""},
		{"wrong method on events", "GET", "/v1/events", 405, CodeMethodNotAllowed, "POST"},
		{"wrong method on top", "DELETE", natPath + "/top", 405, CodeMethodNotAllowed, "GET, HEAD"},
		{"wrong method on member", "POST", natPath + "/members/u1", 405, CodeMethodNotAllowed, "DELETE, GET, HEAD, PUT"},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			rec := serve(t, &fakeService{}, tc.method, tc.target, "")
			check(t, "status", rec.Code, tc.wantStatus)
			e := decodeError(t, rec)
			check(t, "code", rank.Code(e.Error.Code), tc.wantCode)
			check(t, "Allow", rec.Header().Get("Allow"), tc.wantAllow)
		})
	}
}

func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	svc := &fakeService{top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
		panic("boom: secret")
	}}
	hs := newHarness(t, svc, nil)
	rec := hs.do("GET", natPath+"/top", nil)
	check(t, "status", rec.Code, 500)
	e := decodeError(t, rec)
	check(t, "code", rank.Code(e.Error.Code), rank.CodeInternal)
	check(t, "message", e.Error.Message, internalMessage)
	if !strings.Contains(hs.log.String(), "boom: secret") {
		t.Errorf("panic not logged:\n%s", hs.log)
	}
	// The server keeps serving.
	svc.top = func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
		return samplePage(gateway.SourcePrimary, 0), nil
	}
	check(t, "next status", hs.do("GET", natPath+"/top", nil).Code, 200)
}

func TestClientGone(t *testing.T) {
	t.Parallel()
	svc := &fakeService{top: func(ctx context.Context, _ gateway.BoardRef, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
		return gateway.Page{}, fmt.Errorf("seek: %w", ctx.Err())
	}}
	hs := newHarness(t, svc, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest("GET", natPath+"/top", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	hs.h.ServeHTTP(rec, req)
	check(t, "status", rec.Code, statusClientClosed)
	if strings.Contains(hs.log.String(), "internal error") {
		t.Errorf("a client going away is logged as an internal error:\n%s", hs.log)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	svc := &fakeService{top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
		return samplePage(gateway.SourceCache, time.Second), nil
	}}
	hs := newHarness(t, svc, nil)
	hs.do("GET", natPath+"/top", nil)
	hs.do("GET", natPath+"/top?limit=x", nil)
	hs.do("GET", "/no/such/route/u123", nil)
	rec := hs.do("GET", "/metrics", nil)
	check(t, "status", rec.Code, 200)
	body := rec.Body.String()
	for _, want := range []string{
		`rankgate_http_requests_total{code="200",method="GET",route="GET /v1/boards/{family}/{period}/{dimension}/top"} 1`,
		`rankgate_http_requests_total{code="400",method="GET",route="GET /v1/boards/{family}/{period}/{dimension}/top"} 1`,
		`rankgate_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`rankgate_http_request_duration_seconds_count{code="200",method="GET",route="GET /v1/boards/{family}/{period}/{dimension}/top"} 1`,
		`rankgate_http_inflight_requests 1`, // the /metrics request itself
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "u123") {
		t.Errorf("an unmatched path leaks into labels")
	}
	// The access log has one line per request, 4xx at INFO, 2xx at DEBUG.
	logs := hs.log.String()
	for _, want := range []string{
		`"level":"DEBUG","msg":"http request","method":"GET","route":"GET /v1/boards/{family}/{period}/{dimension}/top"`,
		`"level":"INFO","msg":"http request","method":"GET","route":"unmatched","path":"/no/such/route/u123","status":404`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("access log lacks %s\n%s", want, logs)
		}
	}
}

// TestAccessLogLevels: refusals a game's rules give by the thousand (a full
// tournament, a member not ranked yet) log at DEBUG like a 200; other 4xx at
// INFO.
func TestAccessLogLevels(t *testing.T) {
	t.Parallel()
	svc := &fakeService{
		join: func(context.Context, string, string) (gateway.JoinResult, error) {
			return gateway.JoinResult{}, rank.Errorf(rank.CodeTournamentFull, "full")
		},
		member: func(context.Context, gateway.BoardRef, string, gateway.ReadOptions) (gateway.MemberStanding, error) {
			return gateway.MemberStanding{}, rank.Errorf(rank.CodeNotRanked, "not ranked")
		},
	}
	hs := newHarness(t, svc, nil)
	check(t, "join status", hs.do("POST", "/v1/tournaments/cup/join", strings.NewReader(`{"user":"u1"}`)).Code, 409)
	check(t, "member status", hs.do("GET", natPath+"/members/u1", nil).Code, 404)
	check(t, "bad limit status", hs.do("GET", natPath+"/top?limit=x", nil).Code, 400)
	logs := hs.log.String()
	for _, want := range []string{
		`"level":"DEBUG","msg":"http request","method":"POST","route":"POST /v1/tournaments/{id}/join"`,
		`"level":"DEBUG","msg":"http request","method":"GET","route":"GET /v1/boards/{family}/{period}/{dimension}/members/{member}"`,
		`"level":"INFO","msg":"http request","method":"GET","route":"GET /v1/boards/{family}/{period}/{dimension}/top"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("access log lacks %s\n%s", want, logs)
		}
	}
}

func TestAuthSeam(t *testing.T) {
	t.Parallel()
	var seen []string
	var mu sync.Mutex
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Pattern)
			mu.Unlock()
			if r.Header.Get("Authorization") == "" {
				writeErrorBody(w, errorBody{Code: rank.CodeUnauthenticated, Message: "token required"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	svc := &fakeService{ready: func(context.Context) error { return nil }}
	hs := newHarness(t, svc, auth)
	rec := hs.do("POST", "/v1/events", strings.NewReader(`{}`))
	check(t, "status", rec.Code, 401)
	check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeUnauthenticated)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		check(t, p+" status", hs.do("GET", p, nil).Code, 200)
	}
	check(t, "patterns seen by auth", seen, []string{"POST /v1/events"})
}

func TestNew(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	// No dependencies at all: a working handler without /metrics.
	h, err := New(&fakeService{t: t}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	check(t, "/metrics without a gatherer", rec.Code, 404)
	// Registering twice on one registry is an error, not a panic.
	reg := prometheus.NewRegistry()
	if _, err := New(&fakeService{t: t}, Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(&fakeService{t: t}, Options{Registerer: reg}); err == nil {
		t.Error("second New on one registry succeeded")
	}
}

func TestStatusOfCoversEveryCode(t *testing.T) {
	t.Parallel()
	codes := []rank.Code{
		rank.CodeInvalidArgument, rank.CodeInvalidCursor, rank.CodeOffsetTooDeep, rank.CodeUnauthenticated,
		rank.CodeForbidden, rank.CodeUnknownFamily, rank.CodeUnknownBoard, rank.CodeNotRanked,
		rank.CodeUnknownEvent, rank.CodeNotFound, rank.CodePeriodClosed, rank.CodeWrongSource,
		rank.CodeSnapshotExpired, rank.CodeLedgerRequired, rank.CodeTooLarge, rank.CodeOutOfRange,
		rank.CodeUnavailable, CodeMethodNotAllowed, CodeRateLimited,
		rank.CodeUnknownTournament, rank.CodeAlreadyExists, rank.CodeTournamentFull, rank.CodeNotJoined, rank.CodeAttemptsExhausted,
	}
	for _, c := range codes {
		if s := statusOf(c); s == http.StatusInternalServerError || s < 400 {
			t.Errorf("statusOf(%s) = %d", c, s)
		}
	}
	check(t, "statusOf(internal)", statusOf(rank.CodeInternal), 500)
}

func TestPathAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title string
		data  string
		want  string
	}{
		{"top level", `NaN`, ""},
		{"object value", `{"delta":NaN}`, "delta"},
		{"after a complete member", `{"a":1,"delta":NaN}`, "delta"},
		{"at a key", `{"a":1,b:2}`, ""},
		{"nested object key", `{"dims":{"a":"x",b}}`, "dims"},
		{"array element", `{"users":["a","b",NaN]}`, "users[2]"},
		{"after nested arrays", `[[1,[2]],[3],{"x":NaN}]`, "[2].x"},
		{"nested object in array", `{"events":[{"a":{"b":[]}},{"c":NaN}]}`, "events[1].c"},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			var v any
			err := json.Unmarshal([]byte(tc.data), &v)
			var se *json.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("want a syntax error, got %v", err)
			}
			check(t, "path", pathAt([]byte(tc.data), se.Offset), tc.want)
		})
	}
}

func TestHotReadRoutes(t *testing.T) {
	t.Parallel()
	t.Run("snapshot defaults and 201", func(t *testing.T) {
		t.Parallel()
		var gotDepth int
		var gotTTL time.Duration
		svc := &fakeService{t: t, snapshot: func(_ context.Context, b gateway.BoardRef, depth int, ttl time.Duration) (gateway.SnapshotInfo, error) {
			if b.Dimension != "national" || b.Family != "learning" {
				t.Errorf("board %+v", b)
			}
			gotDepth, gotTTL = depth, ttl
			return gateway.SnapshotInfo{Snapshot: "100x1x0123456789abcdef", Size: 3}, nil
		}}
		rec := serve(t, svc, "POST", natPath+"/snapshots", `{}`)
		if rec.Code != 201 || gotDepth != 1000 || gotTTL != time.Minute {
			t.Fatalf("status %d depth %d ttl %v: %s", rec.Code, gotDepth, gotTTL, rec.Body)
		}
		rec = serve(t, svc, "POST", natPath+"/snapshots", `{"depth": 50, "ttl_seconds": 5}`)
		if rec.Code != 201 || gotDepth != 50 || gotTTL != 5*time.Second {
			t.Fatalf("status %d depth %d ttl %v", rec.Code, gotDepth, gotTTL)
		}
	})
	t.Run("snapshot ttl out of bounds", func(t *testing.T) {
		t.Parallel()
		rec := serve(t, &fakeService{t: t}, "POST", natPath+"/snapshots", `{"ttl_seconds": 601}`)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"ttl_seconds"`) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
	t.Run("snapshot unknown field", func(t *testing.T) {
		t.Parallel()
		rec := serve(t, &fakeService{t: t}, "POST", natPath+"/snapshots", `{"deep": 5}`)
		if rec.Code != 400 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
	t.Run("board listing", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{t: t, boards: func(_ context.Context, f, p string) (gateway.BoardList, error) {
			if f != "learning" || p != "2026-W34" {
				t.Errorf("family %q period %q", f, p)
			}
			return gateway.BoardList{ReadMeta: meta(gateway.SourcePrimary, 0), Family: f, Period: p,
				Boards: []gateway.BoardSummary{{Board: "learning/2026-W34/national", Dimension: "national", Shards: 1, Members: 7}}}, nil
		}}
		rec := serve(t, svc, "GET", "/v1/boards/learning/2026-W34", "")
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"members":7`) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
	t.Run("layout passes family and period", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{t: t, layout: func(_ context.Context, f, p string) (gateway.Layout, error) {
			if f != "game" || p != "all" {
				t.Errorf("family %q period %q", f, p)
			}
			return gateway.Layout{ReadMeta: meta(gateway.SourcePrimary, 0), Warnings: []string{"pile"}}, nil
		}}
		rec := serve(t, svc, "GET", "/v1/layout?family=game&period=all", "")
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"warnings":["pile"]`) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

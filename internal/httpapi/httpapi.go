// Package httpapi is rankgate's HTTP layer (the contract: api/openapi.yaml,
// served at GET /v1/openapi.json): routing, strict JSON and
// query decoding, the one error → status map, request metrics, access logs
// and panic recovery. It checks syntax only; the gateway checks meaning
// (families, ids, limits, ranges) and answers with *rank.Error.
//
// It imports internal/gateway (its Service), live (the hub behind GET
// {board}/live), rank, config and ui; it must not
// import go-redis, internal/store or internal/ledger.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/api"
	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/ui"
)

// What the HTTP layer needs from the gateway, split by the routes that use
// it (the way io keeps Reader and Writer apart): a handler group, a fake or a
// decorator deals only with its part. *gateway.Service implements all of
// them; Service is their union, what New takes.

// Writes backs the write routes: events, batches, projections, profiles and
// operator corrections.
type Writes interface {
	ApplyEvent(ctx context.Context, ev gateway.Event) (gateway.EventResult, error)
	ApplyBatch(ctx context.Context, evs []gateway.Event) ([]gateway.BatchItem, error)
	Project(ctx context.Context, b gateway.BoardRef, user string, p gateway.Projection) (gateway.ProjectionResult, error)
	PutProfile(ctx context.Context, user string, p gateway.Profile) error
	Correct(ctx context.Context, c gateway.Correction) (gateway.EventResult, error)
}

// Reads backs the read routes: pages, standings, counts and the period of an
// instant.
type Reads interface {
	Top(ctx context.Context, b gateway.BoardRef, limit int, o gateway.ReadOptions) (gateway.Page, error)
	Member(ctx context.Context, b gateway.BoardRef, user string, o gateway.ReadOptions) (gateway.MemberStanding, error)
	Around(ctx context.Context, b gateway.BoardRef, user string, radius int, o gateway.ReadOptions) (gateway.Page, error)
	Entries(ctx context.Context, b gateway.BoardRef, q gateway.PageQuery, o gateway.ReadOptions) (gateway.Page, error)
	Lookup(ctx context.Context, b gateway.BoardRef, users []string, o gateway.ReadOptions) (gateway.Page, error)
	Count(ctx context.Context, b gateway.BoardRef, min, max int64, o gateway.ReadOptions) (gateway.Count, error)
	Range(ctx context.Context, b gateway.BoardRef, q gateway.RangeQuery, o gateway.ReadOptions) (gateway.Page, error)
	// Period answers the period of family at a time; a zero at means now.
	Period(ctx context.Context, family string, at time.Time) (gateway.PeriodInfo, error)
}

// Lifecycle backs the operator routes: periods (freeze, settle, archive),
// snapshots, reviews, rebuilds, derived boards, the layout and the awards.
type Lifecycle interface {
	CreateSnapshot(ctx context.Context, b gateway.BoardRef, depth int, ttl time.Duration) (gateway.SnapshotInfo, error)
	Boards(ctx context.Context, family, period string) (gateway.BoardList, error)
	Layout(ctx context.Context, family, period string) (gateway.Layout, error)
	PeriodDetail(ctx context.Context, family, period string) (gateway.PeriodDetail, error)
	Freeze(ctx context.Context, family, period string) (gateway.PeriodDetail, error)
	Reviews(ctx context.Context, family, period string, limit int) (gateway.ReviewList, error)
	Settle(ctx context.Context, family, period string, top int) (gateway.SettlementView, error)
	SettlementOf(ctx context.Context, family, period string) (gateway.SettlementView, error)
	Archive(ctx context.Context, family, period string) (gateway.PeriodDetail, error)
	Rebuild(ctx context.Context, b gateway.BoardRef) (gateway.RebuildReport, error)
	Reconcile(ctx context.Context, b gateway.BoardRef) (gateway.ReconcileReport, error)
	DecideReview(ctx context.Context, id, family, period, operator string, accept bool) (gateway.ReviewDecision, error)
	Derive(ctx context.Context, family, period string) (gateway.DeriveReport, error)
	Awards(ctx context.Context, q gateway.AwardQuery) (gateway.AwardList, error)
	AckAward(ctx context.Context, key string) (gateway.AwardView, error)
	RetryAward(ctx context.Context, key string) (gateway.AwardView, error)
}

// Moderation backs the moderation routes (moderation.go): removing a member
// from a board, bans, and a member's score history.
type Moderation interface {
	RemoveMember(ctx context.Context, b gateway.BoardRef, user string, r gateway.Removal) (gateway.RemovalResult, error)
	MemberHistory(ctx context.Context, b gateway.BoardRef, user string, limit int, cursor string) (gateway.History, error)
	PutBan(ctx context.Context, user string, r gateway.BanRequest) (gateway.BanResult, error)
	DeleteBan(ctx context.Context, user string) (gateway.Ban, error)
	ListBans(ctx context.Context) (gateway.BanList, error)
}

// DataRights backs a member's erasure and export (moderation.go).
type DataRights interface {
	EraseMember(ctx context.Context, user string, r gateway.Erasure) (gateway.ErasureResult, error)
	ExportMember(ctx context.Context, user string) (gateway.Export, error)
}

// Competitions backs the tournament routes (tournaments.go).
type Competitions interface {
	CreateTournament(ctx context.Context, t competition.Tournament) (gateway.TournamentInfo, error)
	Tournament(ctx context.Context, id string) (gateway.TournamentInfo, error)
	Tournaments(ctx context.Context, state string) (gateway.TournamentList, error)
	CancelTournament(ctx context.Context, id string) (gateway.TournamentInfo, error)
	Join(ctx context.Context, id, user string) (gateway.JoinResult, error)
	Leagues
}

// Leagues backs the league routes (leagues.go): a member's tier and cohort,
// a period's cohorts and its moves.
type Leagues interface {
	League(ctx context.Context, family, member, period string) (gateway.LeagueStanding, error)
	Cohorts(ctx context.Context, family, period string) (gateway.CohortList, error)
	Moves(ctx context.Context, family, period string) (gateway.MoveList, error)
}

// Service is every part at once, plus readiness (GET /readyz).
type Service interface {
	Writes
	Reads
	Lifecycle
	Moderation
	DataRights
	Competitions
	Ready(ctx context.Context) error
}

var _ Service = (*gateway.Service)(nil)

// PlayerWrites decides whether a player may send an event (*player.Gate).
type PlayerWrites interface {
	CheckEvent(ctx context.Context, member string, w player.Write) error
}

var _ PlayerWrites = (*player.Gate)(nil)

// Options are the dependencies of the handler. Every field may be nil.
type Options struct {
	// Logger receives access logs and the causes of 5xx answers; nil discards.
	Logger *slog.Logger
	// Registerer takes the request metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Gatherer is served on GET /metrics; nil leaves /metrics unrouted.
	Gatherer prometheus.Gatherer
	// Auth, when set, wraps every /v1 route (not /healthz, /readyz,
	// /metrics). It runs after routing, so r.Pattern names the route. It
	// answers its own refusals.
	Auth func(http.Handler) http.Handler
	// MaxInflight bounds the /v1 requests served at once: one more answers
	// 503 unavailable with Retry-After at once (counted in
	// rankgate_http_shed_total). 0: unbounded.
	MaxInflight int
	// RequestTimeout is the context deadline of each /v1 request; running
	// out of it answers 503 unavailable. 0: none.
	RequestTimeout time.Duration
	// Families lists the configured families on GET /v1/families (the
	// status page's menu); nil answers an empty list.
	Families func() []FamilyInfo
	// TracerProvider, when set, traces every request (otelhttp): one server
	// span named after the route pattern, the parent of the Redis and
	// PostgreSQL spans the request causes. Nil: no tracing, no overhead.
	TracerProvider trace.TracerProvider
	// Propagator reads the caller's trace context from the request headers
	// (nil: W3C tracecontext and baggage).
	Propagator propagation.TextMapPropagator
	// CORS lists the browser origins allowed to call the /v1 routes; none:
	// no CORS headers at all.
	CORS CORSOptions
	// Live serves GET {board}/live (text/event-stream).
	Live LiveOptions
	// Players applies the rules of self-only writes to events sent with a
	// player token (write:self): own member, client_writes families,
	// max_delta, the per-member rate. Nil: player tokens write nothing
	// (403).
	Players PlayerWrites
	// Audit records every administrative change (who, what, when, why) and
	// serves GET /v1/audit. Nil: nothing is recorded and GET /v1/audit
	// answers 503.
	Audit AuditLog
	// Tickets is the store POST /v1/tickets issues from; give the same one
	// to NewAuth (AuthOptions.Tickets), which accepts them. Nil: a store
	// with the defaults (fine when Auth is nil: the API is open anyway).
	Tickets *Tickets
}

// Default query values (api/openapi.yaml).
const (
	defaultTopLimit     = 10
	defaultEntriesLimit = 50
	defaultRangeLimit   = 50
	defaultRadius       = 2
	// Count and range bounds default to every exact integer score
	// (rank.MaxSafe is 2^53).
	maxExact = rank.MaxSafe - 1
)

var _ http.Handler = (*server)(nil)

type server struct {
	// The service, one view per route group (see Service).
	writes  Writes
	reads   Reads
	life    Lifecycle
	mod     Moderation
	rights  DataRights
	comp    Competitions
	ready   func(context.Context) error
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	guard   *guard
	// families backs GET /v1/families; nil: none.
	families func() []FamilyInfo
	// patterns lists the /v1 route patterns, in registration order.
	patterns []string
	// lingerBytes and lingerTime bound what is read and discarded of a
	// refused body before the connection closes (see linger).
	lingerBytes int64
	lingerTime  time.Duration
	// allPatterns lists every pattern on the mux (TestOpenAPICoversRoutes).
	allPatterns []string
	// openapi is api/openapi.yaml as JSON, served on GET /v1/openapi.json.
	openapi []byte
	// cors answers preflights and marks answers to listed origins; nil:
	// off.
	cors *cors
	// tickets backs POST /v1/tickets.
	tickets *Tickets
	// liveOpts backs GET {board}/live.
	liveOpts LiveOptions
	// players checks the events of player tokens; nil: refused.
	players PlayerWrites
	// audit records administrative changes; nil: none.
	audit AuditLog
}

// New builds the rankgate HTTP handler.
func New(svc Service, opts Options) (http.Handler, error) {
	if svc == nil {
		return nil, errors.New("httpapi: nil Service")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	g, err := newGuard(opts.MaxInflight, opts.RequestTimeout, opts.Registerer)
	if err != nil {
		return nil, err
	}
	doc, err := api.JSON()
	if err != nil {
		return nil, err
	}
	s := &server{writes: svc, reads: svc, life: svc, mod: svc, rights: svc, comp: svc, ready: svc.Ready, log: log, metrics: m, mux: http.NewServeMux(), guard: g,
		lingerBytes: lingerBytes, lingerTime: lingerTime, openapi: doc}
	s.families = opts.Families
	s.liveOpts = opts.Live
	s.players = opts.Players
	s.audit = opts.Audit
	if s.cors, err = newCORS(opts.CORS); err != nil {
		return nil, err
	}
	if s.tickets = opts.Tickets; s.tickets == nil {
		if s.tickets, err = NewTickets(TicketOptions{}); err != nil {
			return nil, err
		}
	}
	s.routes(opts.Auth, opts.Gatherer)
	if opts.TracerProvider == nil {
		return s, nil
	}
	prop := opts.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return otelhttp.NewHandler(s, "rankgate",
		otelhttp.WithTracerProvider(opts.TracerProvider),
		otelhttp.WithPropagators(prop),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()), // metrics are Prometheus's
		otelhttp.WithSpanNameFormatter(spanName),
	), nil
}

// spanName names a request's span after its route pattern once routed
// ("GET /v1/boards/{family}/{period}/{dimension}/top"): bounded, unlike
// paths; before routing, or unrouted, just the method.
func spanName(_ string, r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return methodLabel(r.Method)
}

const board = "/v1/boards/{family}/{period}/{dimension}"

func (s *server) routes(auth func(http.Handler) http.Handler, g prometheus.Gatherer) {
	api := func(pattern string, h apiFunc) {
		var hh http.Handler = s.adapt(h)
		if auth != nil {
			hh = auth(hh)
		}
		s.handle(pattern, s.guard.wrap(hh))
		s.patterns = append(s.patterns, pattern)
	}
	// Writes.
	api("POST /v1/events", s.event)
	api("POST /v1/events:batch", s.batch)
	api("PUT "+board+"/members/{member}", s.project)
	api("PUT /v1/profiles/{member}", s.putProfile)
	// Reads.
	api("GET "+board+"/top", s.top)
	api("GET "+board+"/members/{member}", s.member)
	api("GET "+board+"/members/{member}/around", s.around)
	api("GET "+board+"/members/{member}/history", s.history)
	api("GET "+board+"/entries", s.entries)
	api("POST "+board+"/members:lookup", s.lookup)
	api("GET "+board+"/count", s.count)
	api("GET "+board+"/range", s.rangeQuery)
	api("POST "+board+"/snapshots", s.snapshot)
	api("GET /v1/boards/{family}/{period}", s.boards)
	api("GET /v1/families/{family}/period", s.period)
	api("GET /v1/families", s.familyList)
	api(issueTicketRoute, s.issueTicket)
	// The live stream: authenticated (a bearer token or, as a TicketRoute,
	// ?ticket=) but outside the guard — a stream is no request in flight
	// and must outlive the request timeout; the hub bounds streams itself.
	{
		var hh http.Handler = s.adapt(s.live)
		if auth != nil {
			hh = auth(hh)
		}
		s.handle(liveRoute, hh)
		s.patterns = append(s.patterns, liveRoute)
	}
	// Administration.
	api("GET /v1/layout", s.layout)
	api("GET /v1/periods/{family}/{period}", s.periodDetail)
	api("POST /v1/periods/{family}/{period}/freeze", s.freeze)
	api("GET /v1/reviews", s.reviews)
	api("POST /v1/reviews/{id}/decision", s.decideReview)
	api("POST /v1/periods/{family}/{period}/settle", s.settle)
	api("GET /v1/periods/{family}/{period}/settlement", s.settlement)
	api("POST /v1/periods/{family}/{period}/archive", s.archive)
	api("POST /v1/periods/{family}/{period}/derive", s.derive)
	api("POST /v1/corrections", s.correct)
	api("POST "+board+"/rebuild", s.rebuild)
	api("GET "+board+"/reconcile", s.reconcile)
	api("GET /v1/awards", s.awards)
	api("POST /v1/awards/{key}/ack", s.ackAward)
	api("POST /v1/awards/{key}/retry", s.retryAward)
	api("DELETE "+board+"/members/{member}", s.removeMember)
	api("PUT /v1/bans/{member}", s.putBan)
	api("DELETE /v1/bans/{member}", s.deleteBan)
	api("GET /v1/bans", s.listBans)
	api("GET /v1/audit", s.auditList)
	api("DELETE /v1/members/{member}", s.eraseMember)
	api("GET /v1/members/{member}/export", s.exportMember)
	// Competitions.
	api("POST /v1/tournaments", s.createTournament)
	api("GET /v1/tournaments", s.listTournaments)
	api("GET /v1/tournaments/{id}", s.getTournament)
	api("DELETE /v1/tournaments/{id}", s.cancelTournament)
	api("POST /v1/tournaments/{id}/join", s.joinTournament)
	api("GET /v1/families/{family}/members/{member}/league", s.league)
	api("GET /v1/families/{family}/cohorts", s.cohorts)
	api("GET /v1/families/{family}/moves", s.moves)
	// Service: open, not shed.
	s.handle("GET /v1/openapi.json", s.adapt(s.openAPI))
	s.handle("GET /healthz", s.adapt(s.healthz))
	s.handle("GET /readyz", s.adapt(s.readyz))
	// The status page: static files, no data of their own.
	s.handle("GET /ui/", http.StripPrefix("/ui", ui.Handler()))
	// Its big-screen live board: one page for every board (it opens the
	// board's live stream itself).
	s.handle("GET /ui/live/{family}/{period}/{dimension}", http.StripPrefix("/ui", ui.Handler()))
	s.handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	if g != nil {
		s.handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
}

// handle registers a pattern on the mux and records it. Every route is in
// api/openapi.yaml (TestOpenAPICoversRoutes).
func (s *server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.allPatterns = append(s.allPatterns, pattern)
}

// openAPI serves the contract, converted to JSON once in New.
func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(s.openapi)))
	h.Set("Cache-Control", "max-age=300")
	_, _ = w.Write(s.openapi)
	return nil
}

// apiFunc is a handler that reports failure by returning it; adapt writes
// the error in the one error shape.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

func (s *server) adapt(h apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

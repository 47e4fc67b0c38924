package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/rank"
)

// CodeMethodNotAllowed answers a known path asked with a method it does not
// serve. It is HTTP-only, so it lives here rather than in rank.
const CodeMethodNotAllowed rank.Code = "method_not_allowed"

// CodeRateLimited answers a request over its token's rate limit (429, with
// Retry-After). HTTP-only, like CodeMethodNotAllowed.
const CodeRateLimited rank.Code = "rate_limited"

// statusClientClosed is recorded when the client went away before the answer
// (nginx's convention); nobody reads it, but it keeps 5xx metrics honest.
const statusClientClosed = 499

const internalMessage = "internal error"

// statusOf is the one map from error code to HTTP status (api/openapi.yaml,
// components/responses). A code it does not know is a 500.
func statusOf(c rank.Code) int {
	switch c {
	case rank.CodeInvalidArgument, rank.CodeInvalidCursor, rank.CodeOffsetTooDeep:
		return http.StatusBadRequest
	case rank.CodeUnauthenticated:
		return http.StatusUnauthorized
	case rank.CodeForbidden, rank.CodeMemberBanned:
		return http.StatusForbidden
	case rank.CodeUnknownFamily, rank.CodeUnknownBoard, rank.CodeNotRanked, rank.CodeUnknownEvent, rank.CodeNotFound,
		rank.CodeUnknownTournament:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case rank.CodePeriodClosed, rank.CodeWrongSource, rank.CodeAlreadyExists, rank.CodeTournamentFull,
		rank.CodeNotJoined, rank.CodeAttemptsExhausted:
		return http.StatusConflict
	case rank.CodeSnapshotExpired:
		return http.StatusGone
	case rank.CodeLedgerRequired:
		return http.StatusPreconditionFailed
	case rank.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case rank.CodeOutOfRange:
		return http.StatusUnprocessableEntity
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case rank.CodeUnavailable:
		return http.StatusServiceUnavailable
	default: // rank.CodeInternal and anything unmapped
		return http.StatusInternalServerError
	}
}

// errorBody is the one error shape: {"error": {"code", "message", "field"}}.
type errorBody struct {
	Code    rank.Code `json:"code"`
	Message string    `json:"message"`
	Field   string    `json:"field,omitempty"`
}

type errorEnvelope struct {
	Error errorBody `json:"error"`
}

// public turns any error into what a client may see, and logs the causes of
// server-side failures. A 500 never shows more than a generic message.
func (s *server) public(r *http.Request, err error) errorBody {
	ctx := r.Context()
	if errors.Is(err, context.DeadlineExceeded) && !errors.As(err, new(*rank.Error)) {
		err = rank.Unavailable(err, "deadline exceeded")
	}
	var e *rank.Error
	if !errors.As(err, &e) {
		s.log.ErrorContext(ctx, "internal error", attrs(r, err)...)
		return errorBody{Code: rank.CodeInternal, Message: internalMessage}
	}
	switch statusOf(e.Code) {
	case http.StatusInternalServerError:
		s.log.ErrorContext(ctx, "internal error", attrs(r, err)...)
		return errorBody{Code: rank.CodeInternal, Message: internalMessage}
	case http.StatusServiceUnavailable:
		s.log.WarnContext(ctx, "unavailable", attrs(r, err)...)
	}
	return errorBody{Code: e.Code, Message: e.Message, Field: e.Field}
}

func attrs(r *http.Request, err error) []any {
	return []any{"method", r.Method, "route", r.Pattern, "path", r.URL.Path, "err", err.Error()}
}

// writeError answers err in the one error shape.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client is gone; nothing it sent was wrong and nothing broke.
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(statusClientClosed)
		s.log.DebugContext(r.Context(), "client closed request", attrs(r, err)...)
		return
	}
	var rl *player.RateLimitedError
	if errors.As(err, &rl) {
		secs := strconv.Itoa(player.RetryAfterSeconds(rl.RetryAfter))
		w.Header().Set("Retry-After", secs)
		writeErrorBody(w, errorBody{Code: CodeRateLimited, Message: rl.Error()})
		return
	}
	b := s.public(r, err)
	writeErrorBody(w, b)
}

func writeErrorBody(w http.ResponseWriter, b errorBody) {
	status := statusOf(b.Code)
	if cw, ok := w.(interface{ noteCode(rank.Code) }); ok {
		cw.noteCode(b.Code)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Cache-Control", "no-store")
	_ = writeJSON(w, status, errorEnvelope{Error: b}) // cannot fail: strings only
}

// logLevel is the access-log level of an answer: its status, and for a
// refusal its error code. The refusals a game's rules give by the thousand
// — a full tournament at its start, attempts used, a member not joined or
// not ranked yet — are answers like a 200 (debug); other 4xx are info, 5xx
// warn.
func logLevel(status int, code rank.Code) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelWarn
	case code == rank.CodeTournamentFull || code == rank.CodeAttemptsExhausted || code == rank.CodeNotJoined || code == rank.CodeNotRanked:
		return slog.LevelDebug
	case status >= 400:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

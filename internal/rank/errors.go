// Package rank holds rankgate's domain vocabulary: entries, board order, the
// composite tie encoding, id validation and the one error type. Standard
// library only.
//
// It must not import any other rankgate package, Redis or net/http: everyone
// imports it.
package rank

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code (api/openapi.yaml).
type Code string

// The error codes of the HTTP contract. internal/httpapi maps each to a status
// in one place.
const (
	CodeInvalidArgument Code = "invalid_argument"
	CodeInvalidCursor   Code = "invalid_cursor"
	CodeOffsetTooDeep   Code = "offset_too_deep"
	CodeUnauthenticated Code = "unauthenticated"
	CodeForbidden       Code = "forbidden"
	CodeMemberBanned    Code = "member_banned"
	CodeUnknownFamily   Code = "unknown_family"
	CodeUnknownBoard    Code = "unknown_board"
	CodeNotRanked       Code = "not_ranked"
	CodeUnknownEvent    Code = "unknown_event"
	CodeNotFound        Code = "not_found"
	CodePeriodClosed    Code = "period_closed"
	CodeWrongSource     Code = "wrong_source"
	CodeSnapshotExpired Code = "snapshot_expired"
	CodeLedgerRequired  Code = "ledger_required"
	CodeTooLarge        Code = "too_large"
	CodeOutOfRange      Code = "out_of_range"
	CodeUnavailable     Code = "unavailable"
	CodeInternal        Code = "internal"

	// Competitions (tournaments created at run time).
	CodeUnknownTournament Code = "unknown_tournament"
	CodeAlreadyExists     Code = "already_exists"
	CodeTournamentFull    Code = "tournament_full"
	CodeNotJoined         Code = "not_joined"
	CodeAttemptsExhausted Code = "attempts_exhausted"
)

// Error is the one error type of rankgate. Field names the input at fault,
// when there is one.
type Error struct {
	Code    Code
	Message string
	Field   string
	Err     error // wrapped cause, never shown to clients
}

func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 invalid_argument naming the field at fault.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Unavailable wraps a backend failure (Redis, a shard, the ledger).
func Unavailable(err error, format string, args ...any) *Error {
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf returns the code of err: the code of the first *Error in its chain,
// CodeInternal otherwise (nil has no code).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

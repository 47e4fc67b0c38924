package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// WriteStatus is a write script's answer, typed so that callers outside this
// package never compare raw Lua strings.
type WriteStatus string

// The statuses the write scripts answer (scripts/*.lua).
const (
	// StatusOK: the write changed the board (apply, reverse, project).
	StatusOK WriteStatus = "ok"
	// StatusSame: a max/min value that did not beat the stored best.
	StatusSame WriteStatus = "same"
	// StatusDup: the event id was applied before; nothing changed.
	StatusDup WriteStatus = "dup"
	// StatusClosed: the period (or this board shard) is frozen.
	StatusClosed WriteStatus = "closed"
	// StatusRange: the points or the achievement number would leave the bounds.
	StatusRange WriteStatus = "range"
	// StatusUnknown: a reversal of an event this board never saw.
	StatusUnknown WriteStatus = "unknown"
	// StatusReversed: a reversal of an event already reversed.
	StatusReversed WriteStatus = "reversed"
	// StatusNotReversible: the event to reverse is itself a reversal.
	StatusNotReversible WriteStatus = "notreversible"
	// StatusStale: a projection older than the stored version.
	StatusStale WriteStatus = "stale"
	// StatusAbsent: a removal of a member the board shard does not hold.
	StatusAbsent WriteStatus = "absent"
	// StatusNotJoined: a gated write (tournament with join required) of a
	// member who has not joined; nothing changed.
	StatusNotJoined WriteStatus = "notjoined"
	// StatusExhausted: a gated write of a member who used every attempt.
	StatusExhausted WriteStatus = "exhausted"
)

// parseStatus checks a script's first reply field against the statuses its
// script may answer.
func parseStatus(kind WriteKind, s string) (WriteStatus, error) {
	st := WriteStatus(s)
	switch kind {
	case KindProject:
		switch st {
		case StatusOK, StatusStale, StatusClosed, StatusRange:
			return st, nil
		}
	case KindRemove:
		switch st {
		case StatusOK, StatusAbsent, StatusClosed:
			return st, nil
		}
	case KindReverse:
		switch st {
		case StatusOK, StatusDup, StatusClosed, StatusRange, StatusUnknown, StatusReversed, StatusNotReversible:
			return st, nil
		}
	default:
		switch st {
		case StatusOK, StatusSame, StatusDup, StatusClosed, StatusRange, StatusNotJoined, StatusExhausted:
			return st, nil
		}
	}
	return "", fmt.Errorf("unexpected script status %q", s)
}

// Stored reports whether a write's answer acknowledges something stored (so
// WAIT must have seen it): refusals that wrote nothing are answered as they are.
func (st WriteStatus) Stored() bool {
	switch st {
	case StatusClosed, StatusRange, StatusUnknown, StatusNotReversible, StatusNotJoined, StatusExhausted:
		return false
	}
	return true
}

// ErrOOM marks a command Redis refused for want of memory (maxmemory reached
// under noeviction): no retry helps until an operator frees or adds memory.
var ErrOOM = errors.New("redis is out of memory")

// classify wraps Redis errors the gateway must tell apart in this package's
// sentinels, keeping the original in the chain. The OOM refusal arrives as
// "-OOM command not allowed…" for a command and may come wrapped in a
// script's error text, so the whole Redis error is searched.
func classify(err error) error {
	var rerr redis.Error
	if err != nil && errors.As(err, &rerr) && strings.Contains(rerr.Error(), "OOM command not allowed") {
		return fmt.Errorf("%w: %w", ErrOOM, err)
	}
	return err
}

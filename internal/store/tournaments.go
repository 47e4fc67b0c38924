package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// JoinStatus is join.lua's answer.
type JoinStatus string

// Join statuses.
const (
	JoinJoined JoinStatus = "joined" // a new seat
	JoinIn     JoinStatus = "in"     // already in
	JoinFull   JoinStatus = "full"   // max size reached
	JoinClosed JoinStatus = "closed" // the board is frozen or archived
)

// JoinResult is one join's answer: its status and the tournament's size
// (seats taken) after it.
type JoinResult struct {
	Status JoinStatus
	Size   int64
}

// Join takes a seat for each member, in order, in one script on the seats
// hash (the joins hash of the national board's shard 0) with that shard's
// meta: exactly maxSize members get in under any concurrency (0: no bound).
// It answers one result per member; a member named twice is "in" the
// second time.
func (s *Store) Join(ctx context.Context, seats, meta string, members []string, maxSize, nowMs int64) ([]JoinResult, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	args := make([]any, 0, 2+len(members))
	args = append(args, maxSize, nowMs)
	for _, m := range members {
		args = append(args, m)
	}
	v, err := joinScript.Run(ctx, s.rw, []string{seats, meta}, args...).Slice()
	if err != nil {
		return nil, s.fail("join", fmt.Errorf("join of %d members: %w", len(members), err))
	}
	if len(v) != 2*len(members) {
		return nil, fmt.Errorf("join: %d replies for %d members", len(v)/2, len(members))
	}
	out := make([]JoinResult, len(members))
	for i := range out {
		st, _ := v[2*i].(string)
		n, _ := v[2*i+1].(int64)
		switch r := (JoinResult{Status: JoinStatus(st), Size: n}); r.Status {
		case JoinJoined, JoinIn, JoinFull, JoinClosed:
			out[i] = r
		default:
			return nil, fmt.Errorf("join: unexpected status %q", st)
		}
	}
	return out, nil
}

// JoinMark is a joined member and the joins hash of the member's own board
// shard.
type JoinMark struct {
	Joins, Member string
}

// MarkJoined records joined members in the joins hashes of their own board
// shards (boards of several shards: the gated write checks the join in its
// slot), in one pipelined round trip (one per node). Idempotent.
func (s *Store) MarkJoined(ctx context.Context, marks []JoinMark, nowMs int64) error {
	return execEach(ctx, s, "join", "marking members joined", marks, func(ctx context.Context, p redis.Pipeliner, m JoinMark) {
		p.HSetNX(ctx, m.Joins, m.Member, nowMs)
	})
}

// AttemptCount is a member's count in the attempts hash of their board
// shard.
type AttemptCount struct {
	Attempts, Member string
	N                int64
}

// RestoreAttempts sets members' attempt counts where their attempts hash has
// none (a rebuild from the ledger: a count Redis still holds includes the
// attempts events hold before their commit, and stays), in one pipelined
// round trip (one per node).
func (s *Store) RestoreAttempts(ctx context.Context, cs []AttemptCount) error {
	return execEach(ctx, s, "join", "restoring members' attempts", cs, func(ctx context.Context, p redis.Pipeliner, c AttemptCount) {
		p.HSetNX(ctx, c.Attempts, c.Member, c.N)
	})
}

// JoinSize returns how many seats a tournament period has taken (the
// length of the seats hash).
func (s *Store) JoinSize(ctx context.Context, seats string) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := s.rw.HLen(ctx, seats).Result()
	if err != nil {
		return 0, s.fail("join", fmt.Errorf("reading the size: %w", err))
	}
	return n, nil
}

// CreateTournament stores a new tournament (def: its JSON) when its id is
// free and fewer than maxActive tournaments are active at nowMs; activeUntil
// is when it stops counting (unix ms; nil: never). It answers the status
// (competition.Registry*) and, when created, the registry's new version
// (limit: the active count).
func (s *Store) CreateTournament(ctx context.Context, k shard.TournamentKeys, id string, def []byte, activeUntil *int64, nowMs int64, maxActive int) (string, int64, error) {
	until := "+inf"
	if activeUntil != nil {
		until = strconv.FormatInt(*activeUntil, 10)
	}
	return s.registry(ctx, k, "create", id, def, until, nowMs, maxActive)
}

// CancelTournament replaces a tournament's definition with its cancelled
// form and stops counting it as active.
func (s *Store) CancelTournament(ctx context.Context, k shard.TournamentKeys, id string, def []byte) (string, int64, error) {
	return s.registry(ctx, k, "cancel", id, def)
}

func (s *Store) registry(ctx context.Context, k shard.TournamentKeys, op, id string, def []byte, more ...any) (string, int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	args := append([]any{op, id, def}, more...)
	v, err := tournamentScript.Run(ctx, s.rw, []string{k.Defs, k.Active, k.Version}, args...).Slice()
	if err != nil {
		return "", 0, s.fail("tournament", fmt.Errorf("%s tournament %s: %w", op, id, err))
	}
	if len(v) != 2 {
		return "", 0, fmt.Errorf("tournament: unexpected reply %v", v)
	}
	st, _ := v[0].(string)
	n, _ := v[1].(int64)
	return st, n, nil
}

// Tournaments returns every tournament (id → JSON) and the version they
// belong to, read in one MULTI from the primary.
func (s *Store) Tournaments(ctx context.Context, k shard.TournamentKeys) (map[string]string, int64, error) {
	return s.versionedHash(ctx, k.Version, k.Defs, "tournament", "the tournaments")
}

// TournamentVersion returns the registry's version (0 before the first
// tournament): what every gateway polls to learn that its copy is stale.
func (s *Store) TournamentVersion(ctx context.Context, k shard.TournamentKeys) (int64, error) {
	return s.version(ctx, k.Version, "tournament", "the tournaments")
}

// Hold is one ledger-mode event's tournament check on the member's board
// shard (gate.lua), run before the ledger commits the event.
type Hold struct {
	Gate    Gate
	EventID string
	Member  string
	// Give gives back the attempt the event holds (the ledger refused it).
	Give bool
}

// Hold answers of gate.lua.
const (
	HoldOK        = "ok"        // may commit (an attempt taken when bounded)
	HoldHeld      = "held"      // a retry of an event that holds an attempt
	HoldNotJoined = "notjoined" // joins required, none
	HoldExhausted = "exhausted" // max attempts used
	HoldGiven     = "given"     // give: the attempt went back
	HoldNone      = "none"      // give: the event held none
)

// HoldAttempts runs the holds in one pipelined round trip (one per node) and
// answers each one's status; an event id holds at most one attempt however
// often it is retried.
func (s *Store) HoldAttempts(ctx context.Context, hs []Hold) ([]string, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	cmds := s.evalPipelined(ctx, len(hs), func(i int) (*redis.Script, []string, []any) {
		h := hs[i]
		op := "take"
		if h.Give {
			op = "give"
		}
		return gateScript, []string{h.Gate.Joins, h.Gate.Attempts}, []any{op, h.EventID, h.Member, flag(h.Gate.JoinRequired), h.Gate.MaxAttempts}
	}, nil)
	out := make([]string, len(hs))
	for i, cmd := range cmds {
		st, err := cmd.Text()
		if err != nil {
			s.m.scriptErrors.WithLabelValues("gate").Inc()
			return nil, s.fail("gate", fmt.Errorf("tournament checks of event %s: %w", hs[i].EventID, err))
		}
		switch st {
		case HoldOK, HoldHeld, HoldNotJoined, HoldExhausted, HoldGiven, HoldNone:
			out[i] = st
		default:
			return nil, fmt.Errorf("gate: unexpected status %q", st)
		}
	}
	return out, nil
}

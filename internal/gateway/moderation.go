package gateway

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// checkModerator validates the operator and reason of a moderation call.
func checkModerator(operator, reason string) error {
	if operator == "" || len(operator) > 128 || !rank.Printable(operator) {
		return rank.Invalid("operator", "operator is required (printable, at most 128 bytes)")
	}
	if reason == "" || len(reason) > 256 || !rank.Printable(reason) {
		return rank.Invalid("reason", "reason is required (printable, at most 256 bytes)")
	}
	return nil
}

// RemoveMember takes a member off one board (issue 13 part 3). In ledger mode
// it is a ledger event of kind removal (rebuild and reconcile keep the member
// removed; later events start afresh), then projected; in Redis-only mode one
// in-slot script (remove.lua). A member not on the board: 404 not_ranked; a
// closed period: 409 period_closed.
func (s *Service) RemoveMember(ctx context.Context, ref BoardRef, user string, r Removal) (RemovalResult, error) {
	if !rank.ValidMember(user) {
		return RemovalResult{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	if err := checkModerator(r.Operator, r.Reason); err != nil {
		return RemovalResult{}, err
	}
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return RemovalResult{}, err
	}
	if err := s.checkOpenFor(ctx, b.fam, b.period); err != nil {
		return RemovalResult{}, err
	}
	out, err := s.removeMember(ctx, b.fam, b.period, user, []string{b.b.Dimension()}, r.Operator, r.Reason)
	if err != nil {
		return RemovalResult{}, err
	}
	if len(out) == 0 {
		return RemovalResult{}, rank.Errorf(rank.CodeNotRanked, "%s is not on %s", user, b.name())
	}
	return RemovalResult{Removed: true, Points: out[0].Points}, nil
}

// checkOpenFor refuses a moderation write on a period that takes no writes.
func (s *Service) checkOpenFor(ctx context.Context, f *family, p period.Period) error {
	if f.closedAt(p, s.now()) {
		return rank.Errorf(rank.CodePeriodClosed, "period %s of %s is closed (end + grace)", p.ID, f.cfg.Name)
	}
	st, err := s.periodState(ctx, f, p.ID)
	if err != nil {
		return err
	}
	if st != "" && st != "open" {
		return rank.Errorf(rank.CodePeriodClosed, "period %s of %s is %s", p.ID, f.cfg.Name, st)
	}
	return nil
}

// removeMember removes user from the boards dims of a family period (nil:
// every board of the period) and answers the boards it was on, with the
// points it had there. This is the one place a removal reaches the ledger or
// Redis (DELETE member and bans both come here); the boards it was removed
// from drop their cached answers (dropCached).
func (s *Service) removeMember(ctx context.Context, f *family, p period.Period, user string, dims []string, operator, reason string) ([]BoardPoints, error) {
	var out []BoardPoints
	var removed []string
	var err error
	if s.ledger != nil && !f.cfg.Derived() {
		out, removed, err = s.removeLedger(ctx, f, p, user, dims, operator, reason, s.now())
	} else {
		out, removed, err = s.removeRedis(ctx, f, p, user, dims, operator, reason)
	}
	if len(removed) > 0 {
		s.dropCached(ctx, f, p.ID, removed)
	}
	return out, err
}

// dropCached drops the cached answers of boards (dimensions of a family
// period) after a removal: the gateway's own read cache (all of it: it has
// no index by board, and removals are rare) and the boards' shared copies
// in Redis (cache_shared). Best effort: a failure is logged, the removal
// stands, and what is left expires within the family's cache_ttl. Other
// gateways' local copies expire within cache_ttl too (sooner: a gateway
// that sees the ban version move drops its cache).
func (s *Service) dropCached(ctx context.Context, f *family, periodID string, dims []string) {
	s.cache.Purge()
	if !f.cfg.CacheShared {
		return
	}
	sc, err := s.shardCounts(ctx, f, periodID)
	if err != nil {
		s.log.Warn("dropping shared cache copies: shard counts", "family", f.cfg.Name, "period", periodID, "err", err)
		return
	}
	for _, d := range dims {
		t, v, ok := shard.ParseDimension(d)
		if !ok {
			continue
		}
		b := f.board(periodID, t, v)
		if _, err := s.readBE.SharedPurge(ctx, s.layout.SharedCachePrefix(b, max(sc[t], 1))); err != nil {
			s.log.Warn("dropping shared cache copies failed", "board", b.String(), "err", err)
		}
	}
}

// removeRedis is removeMember in Redis-only mode (remove.lua per board
// shard); it also answers the dimensions the member was removed from.
func (s *Service) removeRedis(ctx context.Context, f *family, p period.Period, user string, dims []string, operator, reason string) ([]BoardPoints, []string, error) {
	if dims == nil {
		var err error
		if dims, err = s.lifeBE.Boards(ctx, s.layout.Period(f.cfg.Name, p.ID)); err != nil {
			return nil, nil, rank.Unavailable(err, "listing the boards of %s/%s", f.cfg.Name, p.ID)
		}
	}
	sc, err := s.shardCounts(ctx, f, p.ID)
	if err != nil {
		return nil, nil, err
	}
	boards := make([]shard.Board, 0, len(dims))
	ws := make([]store.Write, 0, len(dims))
	for _, d := range dims {
		t, v, ok := shard.ParseDimension(d)
		if !ok {
			continue
		}
		b := f.board(p.ID, t, v)
		n := max(sc[t], 1)
		boards = append(boards, b)
		ws = append(ws, store.Write{Kind: store.KindRemove, Keys: s.layout.Keys(b, shard.Of(user, n), n), Member: user, FeedLen: f.feedLen})
	}
	if len(ws) == 0 {
		return nil, nil, nil
	}
	var out []BoardPoints
	var removed []string
	for i, r := range s.writeBE.Write(ctx, ws) {
		switch {
		case r.Err != nil:
			return out, removed, writeUnavailable(r.Err, "removing %s from %s; retry", user, boards[i].String())
		case r.Status == "closed":
			return out, removed, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is %s", p.ID, f.cfg.Name, r.State)
		case r.Status == "ok" && r.Before != nil:
			bp := BoardPoints{Board: boards[i].String(), Points: f.enc.PointsOf(*r.Before)}
			out = append(out, bp)
			removed = append(removed, boards[i].Dimension())
			s.logRemoved(f, bp, user, operator, reason, "redis")
		}
	}
	return out, removed, nil
}

// removeLedger commits a removal to the ledger, then projects the absent
// totals (version-guarded; what fails here the projector projects later).
func (s *Service) removeLedger(ctx context.Context, f *family, p period.Period, user string, dims []string, operator, reason string, now time.Time) ([]BoardPoints, []string, error) {
	id := "removal:" + f.cfg.Name + "/" + p.ID + ":" + user + ":" + strconv.FormatInt(now.UnixNano(), 36)
	rs, err := s.ledger.Remove(ctx, ledger.Event{EventID: id, Kind: ledger.KindRemoval, Family: f.cfg.Name, Period: p.ID,
		Member: user, Boards: dims, Operator: operator, Reason: reason, RulesVersion: f.cfg.RulesVersion,
		ReceivedAt: now, OccurredAt: now}, f.ledgerRules())
	switch {
	case errors.Is(err, ledger.ErrNotRanked):
		return nil, nil, nil
	case errors.Is(err, ledger.ErrPeriodClosed):
		return nil, nil, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is closed", p.ID, f.cfg.Name)
	case err != nil:
		return nil, nil, ledgerErr(err)
	}
	totals := make([]ledger.BoardTotal, len(rs))
	out := make([]BoardPoints, len(rs))
	removed := make([]string, len(rs))
	for i, r := range rs {
		totals[i], removed[i] = r.After, r.Board
		t, v, _ := shard.ParseDimension(r.Board)
		out[i] = BoardPoints{Board: f.board(p.ID, t, v).String(), Points: r.PointsBefore}
		s.logRemoved(f, out[i], user, operator, reason, "ledger")
	}
	for _, r := range s.writeBE.Write(ctx, s.projections(ctx, f, p.ID, user, totals, now)) {
		if r.Err != nil {
			return nil, removed, rank.Unavailable(r.Err, "the removal is in the ledger; its Redis write failed and the projector will retry it")
		}
	}
	if err := s.ledger.MarkProjected(ctx, id); err != nil {
		s.log.Warn("marking a removal projected failed", "event_id", id, "err", err)
	}
	return out, removed, nil
}

func (s *Service) logRemoved(f *family, bp BoardPoints, user, operator, reason, mode string) {
	s.m.events.WithLabelValues(f.cfg.Name, "removed").Inc()
	s.log.Info("member removed", "family", f.cfg.Name, "board", bp.Board, "member", user, "points_before", bp.Points,
		"operator", operator, "reason", reason, "mode", mode)
}

// MaxHistoryLimit bounds one page of a member's history.
const MaxHistoryLimit = 1000

// MemberHistory answers the events that made a member's points on a board,
// newest first, in the order they changed the board (ledger mode; Redis-only
// mode keeps no history: 412 ledger_required). cursor is the next_cursor of
// the previous page, bound to the board and member.
func (s *Service) MemberHistory(ctx context.Context, ref BoardRef, user string, limit int, cur string) (History, error) {
	if err := s.requireLedger("a member's score history"); err != nil {
		return History{}, err
	}
	if !rank.ValidMember(user) {
		return History{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return History{}, rank.Invalid("limit", "limit must be within 1..%d", MaxHistoryLimit)
	}
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return History{}, err
	}
	scope := "history\x00" + b.name() + "\x00" + user
	var before *ledger.HistoryCursor
	if cur != "" {
		c, err := decodeHistoryCursor(scope, cur)
		if err != nil {
			return History{}, err
		}
		before = &c
	}
	hs, err := s.ledger.History(ctx, b.fam.cfg.Name, b.period.ID, b.b.Dimension(), user, before, limit+1)
	if err != nil {
		return History{}, ledgerErr(err)
	}
	out := History{Board: b.name(), User: user, Events: make([]HistoryEvent, 0, min(len(hs), limit))}
	for i, h := range hs {
		if i == limit {
			out.NextCursor = encodeHistoryCursor(scope, hs[i-1].Cursor)
			break
		}
		out.Events = append(out.Events, HistoryEvent{EventID: h.EventID, Kind: h.Kind, Delta: h.Delta, Value: h.Value,
			Columns: b.fam.colsMap(h.Columns), Reverses: h.Reverses, ReversedBy: h.ReversedBy, PointsBefore: h.PointsBefore, PointsAfter: h.PointsAfter,
			Ranked: h.PresentAfter, Changed: h.Changed, At: h.At.UTC(), RecordedAt: h.RecordedAt.UTC(),
			Operator: h.Operator, Reason: h.Reason})
	}
	return out, nil
}

// A history cursor is the place (change order, version, event id) of the
// last event of a page, bound to the board and member by cursorMAC.
func encodeHistoryCursor(scope string, c ledger.HistoryCursor) string {
	b := make([]byte, 0, 1+16+len(c.EventID)+8)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Ord))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Version))
	b = append(b, c.EventID...)
	b = append(b, cursorMAC(scope, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeHistoryCursor(scope, s string) (ledger.HistoryCursor, error) {
	bad := &rank.Error{Code: rank.CodeInvalidCursor, Field: "cursor", Message: "cursor is not valid for this board and member"}
	if len(s) > 400 {
		return ledger.HistoryCursor{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1+16+1+8 || b[0] != cursorVersion {
		return ledger.HistoryCursor{}, bad
	}
	payload, mac := b[:len(b)-8], b[len(b)-8:]
	if !hmac.Equal(mac, cursorMAC(scope, payload)) {
		return ledger.HistoryCursor{}, bad
	}
	return ledger.HistoryCursor{Ord: int64(binary.BigEndian.Uint64(payload[1:9])),
		Version: int64(binary.BigEndian.Uint64(payload[9:17])), EventID: string(payload[17:])}, nil
}

package gateway

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
)

// AwardQuery filters GET /v1/awards.
type AwardQuery struct {
	Family, Period, State, After string
	Limit                        int
}

var awardKeyRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// AwardsLedger is what the award routes need of the ledger; *ledger.Ledger
// implements it.
type AwardsLedger interface {
	Awards(ctx context.Context, q ledger.AwardQuery) ([]ledger.AwardState, error)
	AckAward(ctx context.Context, key string) (ledger.AwardState, error)
	RetryAward(ctx context.Context, key string, now time.Time) (ledger.AwardState, error)
}

var _ AwardsLedger = (*ledger.Ledger)(nil)

func (s *Service) awardsLedger() (AwardsLedger, error) {
	if err := s.requireLedger("awards (the outbox lives in the ledger)"); err != nil {
		return nil, err
	}
	al, ok := s.ledger.(AwardsLedger)
	if !ok {
		return nil, rank.Errorf(rank.CodeLedgerRequired, "this ledger keeps no award delivery state")
	}
	return al, nil
}

func awardView(a ledger.AwardState) AwardView {
	v := AwardView{IdempotencyKey: a.IdempotencyKey, Family: a.Family, Period: a.Period, Board: a.Family + "/" + a.Period + "/" + a.Board,
		User: a.Member, Rank: a.Rank, Points: a.Points, State: a.State, Attempts: a.Attempts, LastError: a.LastError,
		DeliveredVia: a.DeliveredVia, CreatedAt: a.CreatedAt.UTC()}
	if a.State == ledger.DeliveryPending {
		n := a.NextAttemptAt.UTC()
		v.NextAttemptAt = &n
	}
	if !a.DeliveredAt.IsZero() {
		d := a.DeliveredAt.UTC()
		v.DeliveredAt = &d
	}
	return v
}

// Awards lists awards with their delivery state.
func (s *Service) Awards(ctx context.Context, q AwardQuery) (AwardList, error) {
	al, err := s.awardsLedger()
	if err != nil {
		return AwardList{}, err
	}
	switch q.State {
	case "", ledger.DeliveryPending, ledger.DeliveryDelivered, ledger.DeliveryFailed:
	default:
		return AwardList{}, rank.Invalid("state", "state must be pending, delivered or failed")
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	if q.Limit < 1 || q.Limit > 1000 {
		return AwardList{}, rank.Invalid("limit", "limit must be within 1..1000")
	}
	if q.After != "" && !awardKeyRe.MatchString(q.After) {
		return AwardList{}, rank.Invalid("after", "after must be an award key (64 hex digits)")
	}
	if q.Period != "" && q.Family == "" {
		return AwardList{}, rank.Invalid("period", "period needs family")
	}
	if q.Family != "" {
		f, err := s.family(q.Family)
		if err != nil {
			return AwardList{}, err
		}
		if q.Period != "" {
			p, err := s.periodOf(f, q.Period)
			if err != nil {
				return AwardList{}, err
			}
			q.Period = p.ID
		}
	}
	rows, err := al.Awards(ctx, ledger.AwardQuery{Family: q.Family, Period: q.Period, State: q.State, After: q.After, Limit: q.Limit})
	if err != nil {
		return AwardList{}, ledgerErr(err)
	}
	out := AwardList{Awards: make([]AwardView, len(rows))}
	for i, a := range rows {
		out.Awards[i] = awardView(a)
	}
	if len(rows) == q.Limit {
		out.NextAfter = rows[len(rows)-1].IdempotencyKey
	}
	return out, nil
}

// AckAward marks an award delivered by a consumer that pulls. Idempotent.
func (s *Service) AckAward(ctx context.Context, key string) (AwardView, error) {
	return s.awardChange(ctx, key, func(al AwardsLedger) (ledger.AwardState, error) { return al.AckAward(ctx, key) })
}

// RetryAward makes a failed award due again at once with a fresh attempt
// budget (admin). A delivered award is answered as it is.
func (s *Service) RetryAward(ctx context.Context, key string) (AwardView, error) {
	return s.awardChange(ctx, key, func(al AwardsLedger) (ledger.AwardState, error) { return al.RetryAward(ctx, key, s.now()) })
}

func (s *Service) awardChange(ctx context.Context, key string, fn func(AwardsLedger) (ledger.AwardState, error)) (AwardView, error) {
	al, err := s.awardsLedger()
	if err != nil {
		return AwardView{}, err
	}
	if !awardKeyRe.MatchString(key) {
		return AwardView{}, rank.Invalid("key", "an award key is 64 lower-case hex digits")
	}
	a, err := fn(al)
	if errors.Is(err, ledger.ErrAwardNotFound) {
		return AwardView{}, rank.Errorf(rank.CodeNotFound, "no award %s", key)
	}
	if err != nil {
		return AwardView{}, ledgerErr(err)
	}
	return awardView(a), nil
}

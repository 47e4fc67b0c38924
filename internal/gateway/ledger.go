package gateway

import (
	"context"
)

// Ledger is what the gateway needs from the PostgreSQL ledger (nil:
// Redis-only mode).
type Ledger interface {
	Freeze(ctx context.Context, family, period string) error
}

// ledgerErr maps ledger failures to API errors.
func ledgerErr(err error) error {
	return unavailable(err)
}

func (s *Service) ledgerReviews(ctx context.Context, family, period string, limit int) ([]Review, error) {
	return nil, nil
}

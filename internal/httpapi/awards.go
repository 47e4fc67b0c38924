package httpapi

import (
	"net/http"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/gateway"
)

func (s *server) awards(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	var aq gateway.AwardQuery
	aq.Family, _ = q.str("family")
	aq.Period, _ = q.str("period")
	aq.State, _ = q.str("state")
	aq.After, _ = q.str("after")
	aq.Limit = q.int("limit", 100)
	if q.err != nil {
		return q.err
	}
	res, err := s.life.Awards(r.Context(), aq)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) ackAward(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.AckAward(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) retryAward(w http.ResponseWriter, r *http.Request) error {
	res, err := s.life.RetryAward(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionAwardRetry, Target: "award:" + r.PathValue("key")})
	return writeJSON(w, http.StatusOK, res)
}

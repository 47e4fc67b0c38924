package httpapi

import (
	"net/http"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/rank"
)

// joinRequest is the body of POST /v1/tournaments/{id}/join.
type joinRequest struct {
	User string `json:"user"`
}

func (s *server) createTournament(w http.ResponseWriter, r *http.Request) error {
	var t competition.Tournament
	if err := decodeBody(w, r, &t); err != nil {
		return err
	}
	switch {
	case !t.Created.IsZero():
		return rank.Invalid("created", "created is set by the gateway, not by a request")
	case t.Cancelled != nil:
		return rank.Invalid("cancelled", "cancelled is set by DELETE /v1/tournaments/{id}, not by a request")
	}
	res, err := s.comp.CreateTournament(r.Context(), t)
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionTournamentCreate, Target: "tournament:" + res.ID})
	return writeJSON(w, http.StatusCreated, res)
}

func (s *server) listTournaments(w http.ResponseWriter, r *http.Request) error {
	res, err := s.comp.Tournaments(r.Context(), r.URL.Query().Get("state"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) getTournament(w http.ResponseWriter, r *http.Request) error {
	res, err := s.comp.Tournament(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) cancelTournament(w http.ResponseWriter, r *http.Request) error {
	res, err := s.comp.CancelTournament(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionTournamentCancel, Target: "tournament:" + res.ID})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) joinTournament(w http.ResponseWriter, r *http.Request) error {
	var req joinRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.comp.Join(r.Context(), r.PathValue("id"), req.User)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

package httpapi

import (
	"net/http"

	"github.com/rankgate/rankgate/internal/gateway"
)

// Moderation (issue 13): removing a member from a board, bans, a member's
// score history.

const defaultHistoryLimit = 50

func (s *server) removeMember(w http.ResponseWriter, r *http.Request) error {
	var req gateway.Removal
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.mod.RemoveMember(r.Context(), boardOf(r), r.PathValue("member"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) history(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	limit := q.int("limit", defaultHistoryLimit)
	cursor, _ := q.str("cursor")
	if q.err != nil {
		return q.err
	}
	res, err := s.mod.MemberHistory(r.Context(), boardOf(r), r.PathValue("member"), limit, cursor)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) putBan(w http.ResponseWriter, r *http.Request) error {
	var req gateway.BanRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.mod.PutBan(r.Context(), r.PathValue("member"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) deleteBan(w http.ResponseWriter, r *http.Request) error {
	res, err := s.mod.DeleteBan(r.Context(), r.PathValue("member"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) listBans(w http.ResponseWriter, r *http.Request) error {
	res, err := s.mod.ListBans(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

// A member's data rights (admin): erasure and export.

func (s *server) eraseMember(w http.ResponseWriter, r *http.Request) error {
	var req gateway.Erasure
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.rights.EraseMember(r.Context(), r.PathValue("member"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) exportMember(w http.ResponseWriter, r *http.Request) error {
	res, err := s.rights.ExportMember(r.Context(), r.PathValue("member"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

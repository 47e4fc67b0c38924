package httpapi

import (
	"net/http"

	"github.com/rankgate/rankgate/internal/audit"
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
	s.record(r, audit.Entry{Action: audit.ActionMemberRemove, Target: boardTarget(r) + " " + memberTarget(r.PathValue("member")),
		DeclaredOperator: req.Operator, Reason: req.Reason})
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
	s.record(r, audit.Entry{Action: audit.ActionMemberBan, Target: memberTarget(r.PathValue("member")) + familiesTarget(req.Families),
		DeclaredOperator: req.Operator, Reason: req.Reason})
	return writeJSON(w, http.StatusOK, res)
}

func (s *server) deleteBan(w http.ResponseWriter, r *http.Request) error {
	res, err := s.mod.DeleteBan(r.Context(), r.PathValue("member"))
	if err != nil {
		return err
	}
	s.record(r, audit.Entry{Action: audit.ActionMemberUnban, Target: memberTarget(r.PathValue("member"))})
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
	member := r.PathValue("member")
	res, err := s.rights.EraseMember(r.Context(), member, req)
	if err != nil {
		return err
	}
	if s.audit != nil {
		// The member is named by its keyed hash only; without
		// audit.hmac_secret_env, by no name at all (audit.UnnamedMember).
		target, _ := s.audit.MemberTarget(member)
		s.record(r, audit.Erasure(target, member, req.Operator, req.Reason))
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

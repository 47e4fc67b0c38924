package httpapi

import "net/http"

// periodParam is the period query parameter of the league routes: a
// period id, or current (the default).
func periodParam(r *http.Request) string {
	p := r.URL.Query().Get("period")
	if p == "" {
		return "current"
	}
	return p
}

func (s *server) league(w http.ResponseWriter, r *http.Request) error {
	v, err := s.comp.League(r.Context(), r.PathValue("family"), r.PathValue("member"), periodParam(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *server) cohorts(w http.ResponseWriter, r *http.Request) error {
	v, err := s.comp.Cohorts(r.Context(), r.PathValue("family"), periodParam(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *server) moves(w http.ResponseWriter, r *http.Request) error {
	v, err := s.comp.Moves(r.Context(), r.PathValue("family"), periodParam(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

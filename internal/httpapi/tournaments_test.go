package httpapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

func (f *fakeService) CreateTournament(ctx context.Context, t competition.Tournament) (gateway.TournamentInfo, error) {
	if f.createTour != nil {
		return f.createTour(ctx, t)
	}
	return gateway.TournamentInfo{}, f.unexpected("CreateTournament")
}

func (f *fakeService) Tournament(ctx context.Context, id string) (gateway.TournamentInfo, error) {
	return gateway.TournamentInfo{}, f.unexpected("Tournament")
}

func (f *fakeService) Tournaments(ctx context.Context, state string) (gateway.TournamentList, error) {
	return gateway.TournamentList{}, f.unexpected("Tournaments")
}

func (f *fakeService) CancelTournament(ctx context.Context, id string) (gateway.TournamentInfo, error) {
	return gateway.TournamentInfo{}, f.unexpected("CancelTournament")
}

func (f *fakeService) Join(ctx context.Context, id, user string) (gateway.JoinResult, error) {
	if f.join != nil {
		return f.join(ctx, id, user)
	}
	return gateway.JoinResult{}, f.unexpected("Join")
}

// TestTournamentRoutes: the handlers decode strictly, refuse the fields
// only the gateway sets, and map the competition codes to their statuses.
func TestTournamentRoutes(t *testing.T) {
	t.Parallel()
	svc := &fakeService{t: t,
		createTour: func(_ context.Context, tr competition.Tournament) (gateway.TournamentInfo, error) {
			if tr.ID == "taken" {
				return gateway.TournamentInfo{}, &rank.Error{Code: rank.CodeAlreadyExists, Field: "id", Message: "taken"}
			}
			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			if err := tr.Normalize(config.Default().Tournaments.Defaults, now); err != nil {
				return gateway.TournamentInfo{}, err
			}
			return gateway.TournamentInfo{Tournament: tr.Tournament, Created: tr.Created, Cancelled: tr.Cancelled, State: tr.State(now), Period: tr.SeasonID(), Starts: *tr.Start, Ends: *tr.End}, nil
		},
		join: func(_ context.Context, id, user string) (gateway.JoinResult, error) {
			switch user {
			case "full":
				return gateway.JoinResult{}, rank.Errorf(rank.CodeTournamentFull, "full")
			case "boom":
				return gateway.JoinResult{}, errors.New("secret")
			}
			return gateway.JoinResult{Joined: true, Size: 1, Period: "p"}, nil
		},
	}
	tests := []struct {
		title, method, path, body string
		status                    int
		want                      string
	}{
		{"create", "POST", "/v1/tournaments", `{"id":"cup","start":"2026-12-05T10:00:00Z","end":"2026-12-05T22:00:00Z","max_size":10}`, 201, `"state":"upcoming"`},
		{"create clash", "POST", "/v1/tournaments", `{"id":"taken"}`, 409, `"already_exists"`},
		{"created set by the client", "POST", "/v1/tournaments", `{"id":"cup","created":"2026-01-01T00:00:00Z"}`, 400, `"field":"created"`},
		{"unknown field", "POST", "/v1/tournaments", `{"id":"cup","size":3}`, 400, `"field":"size"`},
		{"bad start", "POST", "/v1/tournaments", `{"id":"cup","start":"tomorrow"}`, 400, `"invalid_argument"`},
		{"bad rule names the field", "POST", "/v1/tournaments", `{"id":"cup","start":"2026-12-05T10:00:00Z","end":"2026-12-05T22:00:00Z","max_size":0}`, 400, `"field":"max_size"`},
		{"join", "POST", "/v1/tournaments/cup/join", `{"user":"u1"}`, 200, `"joined":true`},
		{"join full", "POST", "/v1/tournaments/cup/join", `{"user":"full"}`, 409, `"tournament_full"`},
		{"join hides internal errors", "POST", "/v1/tournaments/cup/join", `{"user":"boom"}`, 500, `"internal"`},
		{"join without body", "POST", "/v1/tournaments/cup/join", ``, 400, `"invalid_argument"`},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			rec := serve(t, svc, tc.method, tc.path, tc.body)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("%s %s: %d %s; want %d with %s", tc.method, tc.path, rec.Code, rec.Body.String(), tc.status, tc.want)
			}
		})
	}
}

func (f *fakeService) League(ctx context.Context, family, member, period string) (gateway.LeagueStanding, error) {
	return gateway.LeagueStanding{}, f.unexpected("League")
}

func (f *fakeService) Cohorts(ctx context.Context, family, period string) (gateway.CohortList, error) {
	return gateway.CohortList{}, f.unexpected("Cohorts")
}

func (f *fakeService) Moves(ctx context.Context, family, period string) (gateway.MoveList, error) {
	return gateway.MoveList{}, f.unexpected("Moves")
}

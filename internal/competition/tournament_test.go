package competition

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rankgate/rankgate/api/wire"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/rank"
)

var (
	now      = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	defaults = config.Default().Tournaments.Defaults
)

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func ptr[T any](v T) *T { return &v }

// oneShot is a valid one-shot tournament; cases change one thing.
func oneShot() Tournament {
	return Tournament{Tournament: wire.Tournament{ID: "spring-cup", Start: at("2026-12-05T10:00:00Z"), End: at("2026-12-05T22:00:00Z"),
		MaxSize: ptr(int64(100)), MaxAttempts: ptr(int64(3)), JoinRequired: true}}
}

// TestNormalizeRefusesBadRules: every bad rule is a 400 naming its field,
// checked like a configured family.
func TestNormalizeRefusesBadRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title  string
		change func(*Tournament)
		field  string
	}{
		{"bad id", func(t *Tournament) { t.ID = "Spring Cup" }, "id"},
		{"no start", func(t *Tournament) { t.Start = nil }, "start"},
		{"no end", func(t *Tournament) { t.End = nil }, "end"},
		{"end before start", func(t *Tournament) { t.End = at("2026-12-05T09:00:00Z") }, "end"},
		{"end in the past", func(t *Tournament) { t.Start, t.End = at("2026-11-01T00:00:00Z"), at("2026-11-02T00:00:00Z") }, "end"},
		{"max_size 0", func(t *Tournament) { t.MaxSize = ptr(int64(0)) }, "max_size"},
		{"max_attempts 0", func(t *Tournament) { t.MaxAttempts = ptr(int64(0)) }, "max_attempts"},
		{"unknown aggregate", func(t *Tournament) { t.Aggregate = "avg" }, "aggregate"},
		{"unknown order", func(t *Tournament) { t.Order = "up" }, "order"},
		{"unknown tie", func(t *Tournament) { t.Tie = "random" }, "tie"},
		{"unknown rank", func(t *Tournament) { t.Rank = "dense" }, "rank"},
		{"tie first leaves 2^53", func(t *Tournament) { t.Tie, t.MaxPoints = "first", ptr(int64(1)<<40) }, "max_points"},
		{"shards 0", func(t *Tournament) { t.Shards = ptr(0) }, "shards"},
		{"shards too many", func(t *Tournament) { t.Shards = ptr(5000) }, "shards"},
		{"duration without reset", func(t *Tournament) { t.Duration = "1h" }, "duration"},
		{"reset without duration", func(t *Tournament) { t.End, t.Reset = nil, "0 * * * *" }, "duration"},
		{"cron that never fires", func(t *Tournament) { t.End, t.Reset, t.Duration = nil, "0 0 30 2 *", "1h" }, "reset"},
		{"cron malformed", func(t *Tournament) { t.End, t.Reset, t.Duration = nil, "every hour", "1h" }, "reset"},
		{"duration 0", func(t *Tournament) { t.End, t.Reset, t.Duration = nil, "0 * * * *", "0s" }, "duration"},
		{"unknown timezone", func(t *Tournament) { t.Timezone = "Mars/Base" }, "timezone"},
		{"negative grace", func(t *Tournament) { t.Grace = "-1s" }, "grace"},
		{"metadata not an object", func(t *Tournament) { t.Metadata = json.RawMessage(`[1]`) }, "metadata"},
		{"column max 0", func(t *Tournament) { t.Columns = []Column{{Name: "time_ms", Order: "asc"}} }, "columns[0].max"},
		{"column twice", func(t *Tournament) { t.Columns = []Column{{Name: "a", Max: 9}, {Name: "a", Max: 9}} }, "columns[1].name"},
		{"settle top 0 after defaults", func(t *Tournament) { t.Lifecycle = &Lifecycle{Settle: &Step{Top: -1}} }, "lifecycle.settle.top"},
		{"archive top", func(t *Tournament) { t.Lifecycle = &Lifecycle{Archive: &Step{Top: 3}} }, "lifecycle.archive.top"},
		{"bad step duration", func(t *Tournament) { t.Lifecycle = &Lifecycle{Archive: &Step{After: "soon"}} }, "lifecycle.archive.after"},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			tr := oneShot()
			tc.change(&tr)
			err := tr.Normalize(defaults, now)
			re, ok := err.(*rank.Error)
			if !ok || re.Code != rank.CodeInvalidArgument || re.Field != tc.field {
				t.Fatalf("Normalize = %v, want invalid_argument on %s", err, tc.field)
			}
		})
	}
}

// TestNormalizeFillsDefaults: a minimal request gets the documented rules,
// and its family is the one a config file would declare.
func TestNormalizeFillsDefaults(t *testing.T) {
	t.Parallel()
	tr := oneShot()
	if err := tr.Normalize(defaults, now); err != nil {
		t.Fatal(err)
	}
	if tr.Aggregate != "sum" || tr.Order != "desc" || tr.Tie != "member" || tr.Rank != "competition" || *tr.Shards != 1 ||
		tr.Grace != "10s" || tr.Lifecycle.Settle.Top != DefaultTop || tr.Created != now {
		t.Errorf("defaults: %+v", tr)
	}
	f, err := tr.Family(defaults)
	if err != nil {
		t.Fatal(err)
	}
	if f.Period != config.PeriodSeasons || len(f.Seasons) != 1 || f.Seasons[0].ID != "20261205T1000" ||
		f.Dimensions["national"].Shards != 1 || f.Lifecycle == nil || f.Lifecycle.Freeze != config.FreezeAuto || f.Grace != 10*time.Second {
		t.Errorf("family: %+v", f)
	}
	p := f.PeriodSpec().At(*at("2026-12-05T12:00:00Z"))
	if p.ID != "20261205T1000" || !p.Start.Equal(*tr.Start) || !p.End.Equal(*tr.End) {
		t.Errorf("period %+v", p)
	}
}

func TestRecurringFamily(t *testing.T) {
	t.Parallel()
	tr := Tournament{Tournament: wire.Tournament{ID: "hourly", Reset: "0 * * * *", Duration: "20m"}}
	if err := tr.Normalize(defaults, now); err != nil {
		t.Fatal(err)
	}
	if tr.Start == nil || !tr.Start.Equal(now) || tr.End != nil {
		t.Fatalf("series bounds: start %v end %v", tr.Start, tr.End)
	}
	f, err := tr.Family(defaults)
	if err != nil {
		t.Fatal(err)
	}
	spec := f.PeriodSpec()
	if p := spec.At(*at("2026-12-01T13:10:00Z")); p.ID != "20261201T1300" || !p.End.Equal(*at("2026-12-01T13:20:00Z")) {
		t.Errorf("window %+v", p)
	}
	if p := spec.At(*at("2026-12-01T13:30:00Z")); p.Contains(*at("2026-12-01T13:30:00Z")) {
		t.Errorf("13:30 is in window %+v; want the gap", p)
	}
}

func TestState(t *testing.T) {
	t.Parallel()
	tr := oneShot()
	if err := tr.Normalize(defaults, now); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at   *time.Time
		want string
	}{
		{at("2026-12-05T09:59:59Z"), StateUpcoming},
		{at("2026-12-05T10:00:00Z"), StateActive},
		{at("2026-12-05T22:00:00Z"), StateEnded},
	}
	for _, tc := range tests {
		if got := tr.State(*tc.at); got != tc.want {
			t.Errorf("State(%s) = %s, want %s", tc.at, got, tc.want)
		}
	}
	tr.Cancelled = at("2026-12-05T11:00:00Z")
	if got := tr.State(*at("2026-12-05T10:30:00Z")); got != StateCancelled {
		t.Errorf("cancelled: %s", got)
	}
}

func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	tr := oneShot()
	tr.Metadata = json.RawMessage(`{"prize": "gold"}`)
	if err := tr.Normalize(defaults, now); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(js) || string(back.Metadata) != `{"prize":"gold"}` {
		t.Errorf("round trip:\n%s\n%s", js, again)
	}
	if _, err := Parse([]byte(`{"id": "x"}`)); err == nil {
		t.Error("Parse accepted a definition without rules")
	}
}

package period

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustCompile(t testing.TB, s Spec) Spec {
	t.Helper()
	c, err := s.Compile()
	if err != nil {
		t.Fatalf("Compile(%+v): %v", s, err)
	}
	return c
}

func TestShapesAt(t *testing.T) {
	t.Parallel()
	ber, ny, sh := mustLoc(t, "Europe/Berlin"), mustLoc(t, "America/New_York"), mustLoc(t, "Asia/Shanghai")
	hourUTC := Spec{Kind: Hour}
	hourBER := Spec{Kind: Hour, Loc: ber}
	hourSH := Spec{Kind: Hour, Loc: sh}
	hourNY := Spec{Kind: Hour, Loc: ny}
	weeklyBER := mustCompile(t, Spec{Kind: Cron, Loc: ber, Reset: "0 4 * * 1"})
	nightlyBER := mustCompile(t, Spec{Kind: Cron, Loc: ber, Reset: "30 2 * * *"})
	nightlyNY := mustCompile(t, Spec{Kind: Cron, Loc: ny, Reset: "30 1 * * *"})
	hourlyNY := mustCompile(t, Spec{Kind: Cron, Loc: ny, Reset: "15 * * * *"})
	seasons := mustCompile(t, Spec{Kind: Seasons, Loc: ber, Seasons: []Season{
		{ID: "s1", Start: utc(t, "2026-12-01T00:00:00Z"), End: utc(t, "2026-12-15T00:00:00Z")},
		{ID: "winter", Start: utc(t, "2026-12-20T00:00:00Z"), End: utc(t, "2027-01-10T00:00:00Z")},
		{ID: "s3", Start: utc(t, "2027-03-20T00:00:00Z"), End: utc(t, "2027-04-10T00:00:00Z")}, // across the DST change
	}})
	tests := []struct {
		name       string
		spec       Spec
		at         string
		id         string
		start, end string
		inside     bool
	}{
		{"hour utc", hourUTC, "2026-12-01T10:59:59Z", "2026-12-01T10", "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z", true},
		{"hour at the year end utc", hourUTC, "2026-12-31T23:00:00Z", "2026-12-31T23", "2026-12-31T23:00:00Z", "2027-01-01T00:00:00Z", true},
		{"hour at the year end in shanghai", hourSH, "2026-12-31T16:00:00Z", "2027-01-01T00", "2026-12-31T16:00:00Z", "2026-12-31T17:00:00Z", true},
		{"hour at the year end in new york", hourNY, "2027-01-01T04:59:00Z", "2026-12-31T23", "2027-01-01T04:00:00Z", "2027-01-01T05:00:00Z", true},
		{"hour before the spring gap", hourBER, "2026-03-29T00:30:00Z", "2026-03-29T01", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", true},
		{"hour after the spring gap (02 skipped)", hourBER, "2026-03-29T01:00:00Z", "2026-03-29T03", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", true},
		{"repeated autumn hour, first pass", hourBER, "2026-10-25T00:10:00Z", "2026-10-25T02", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", true},
		{"repeated autumn hour, second pass", hourBER, "2026-10-25T01:10:00Z", "2026-10-25T02", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", true},
		{"hour after the repeated one", hourBER, "2026-10-25T02:00:00Z", "2026-10-25T03", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z", true},
		{"repeated hour in new york", hourNY, "2026-11-01T06:30:00Z", "2026-11-01T01", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", true},

		{"weekly cron", weeklyBER, "2026-12-09T12:00:00Z", "20261207T0400", "2026-12-07T03:00:00Z", "2026-12-14T03:00:00Z", true},
		{"weekly cron across the year end", weeklyBER, "2027-01-01T00:00:00Z", "20261228T0400", "2026-12-28T03:00:00Z", "2027-01-04T03:00:00Z", true},
		{"weekly cron across the autumn change (169 h)", weeklyBER, "2026-10-25T12:00:00Z", "20261019T0400", "2026-10-19T02:00:00Z", "2026-10-26T03:00:00Z", true},
		{"weekly cron across the spring change (167 h)", weeklyBER, "2026-03-29T12:00:00Z", "20260323T0400", "2026-03-23T03:00:00Z", "2026-03-30T02:00:00Z", true},
		{"weekly cron at a fire", weeklyBER, "2026-12-14T03:00:00Z", "20261214T0400", "2026-12-14T03:00:00Z", "2026-12-21T03:00:00Z", true},
		{"nightly cron skips the missing 02:30", nightlyBER, "2026-03-29T10:00:00Z", "20260328T0230", "2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", true},
		{"nightly cron over a repeated 01:30 is one window", nightlyNY, "2026-11-01T06:00:00Z", "20261101T0130", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", true},
		{"nightly cron, second 01:30 pass", nightlyNY, "2026-11-01T06:45:00Z", "20261101T0130", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", true},
		{"hourly cron over the repeated hour", hourlyNY, "2026-11-01T06:20:00Z", "20261101T0115", "2026-11-01T05:15:00Z", "2026-11-01T07:15:00Z", true},
		{"hourly cron at the year end", hourlyNY, "2027-01-01T05:00:00Z", "20261231T2315", "2027-01-01T04:15:00Z", "2027-01-01T05:15:00Z", true},

		{"in a season", seasons, "2026-12-10T00:00:00Z", "s1", "2026-12-01T00:00:00Z", "2026-12-15T00:00:00Z", true},
		{"season across the year end", seasons, "2027-01-01T00:00:00Z", "winter", "2026-12-20T00:00:00Z", "2027-01-10T00:00:00Z", true},
		{"season across the DST change", seasons, "2027-03-30T00:00:00Z", "s3", "2027-03-20T00:00:00Z", "2027-04-10T00:00:00Z", true},
		{"between seasons: the season before", seasons, "2026-12-17T00:00:00Z", "s1", "2026-12-01T00:00:00Z", "2026-12-15T00:00:00Z", false},
		{"at a season's end", seasons, "2026-12-15T00:00:00Z", "s1", "2026-12-01T00:00:00Z", "2026-12-15T00:00:00Z", false},
		{"before the first season", seasons, "2026-11-01T00:00:00Z", "s1", "2026-12-01T00:00:00Z", "2026-12-15T00:00:00Z", false},
		{"after the last season", seasons, "2027-05-01T00:00:00Z", "s3", "2027-03-20T00:00:00Z", "2027-04-10T00:00:00Z", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at := utc(t, tc.at)
			p := tc.spec.At(at)
			if p.ID != tc.id || !p.Start.Equal(utc(t, tc.start)) || !p.End.Equal(utc(t, tc.end)) {
				t.Fatalf("At(%s) = %s [%s, %s), want %s [%s, %s)", tc.at, p.ID, p.Start.UTC().Format(time.RFC3339),
					p.End.UTC().Format(time.RFC3339), tc.id, tc.start, tc.end)
			}
			if p.Contains(at) != tc.inside {
				t.Fatalf("Contains(%s) = %v, want %v", tc.at, !tc.inside, tc.inside)
			}
			got, err := tc.spec.Parse(tc.id)
			if err != nil || !samePeriod(got, p) {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tc.id, got, err, p)
			}
		})
	}
}

func TestShapesParseErrors(t *testing.T) {
	t.Parallel()
	ber := mustLoc(t, "Europe/Berlin")
	hour := Spec{Kind: Hour, Loc: ber}
	weekly := mustCompile(t, Spec{Kind: Cron, Loc: ber, Reset: "0 4 * * 1"})
	seasons := Spec{Kind: Seasons, Seasons: []Season{{ID: "s1", Start: utc(t, "2026-12-01T00:00:00Z"), End: utc(t, "2026-12-15T00:00:00Z")}}}
	for _, tc := range []struct {
		name string
		spec Spec
		id   string
	}{
		{"hour skipped by DST", hour, "2026-03-29T02"},
		{"hour 24", hour, "2026-03-29T24"},
		{"hour unpadded", hour, "2026-03-29T2"},
		{"hour as a day", hour, "2026-03-29"},
		{"hour with minutes", hour, "2026-03-29T10:00"},
		{"cron: not a fire", weekly, "20261208T0400"},
		{"cron: a fire minute off", weekly, "20261207T0401"},
		{"cron: day 32", weekly, "20261232T0400"},
		{"cron: dashed", weekly, "2026-12-07T0400"},
		{"cron: current", weekly, "current"},
		{"season: unknown", seasons, "s2"},
		{"season: empty", seasons, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if p, err := tc.spec.Parse(tc.id); err == nil || !errors.Is(err, ErrInvalidID) {
				t.Fatalf("Parse(%q) = %v, %v; want ErrInvalidID", tc.id, p, err)
			}
		})
	}
}

// TestShapesContiguous walks hour and cron periods through 2026 and the
// turn of the year in every test zone: they tile time, ids increase and
// parse back.
func TestShapesContiguous(t *testing.T) {
	t.Parallel()
	exprs := []string{"0 4 * * 1", "30 2 * * *", "0 0 1 * *", "30 1 * * 0", "*/20 1-3 * * 0"}
	for _, z := range zones {
		loc := mustLoc(t, z)
		specs := []Spec{{Kind: Hour, Loc: loc}}
		for _, e := range exprs {
			specs = append(specs, mustCompile(t, Spec{Kind: Cron, Loc: loc, Reset: e}))
		}
		for _, s := range specs {
			t.Run(z+"/"+string(s.Kind)+"/"+s.Reset, func(t *testing.T) {
				t.Parallel()
				p := s.At(utc(t, "2026-01-01T00:00:00Z"))
				for p.Start.Before(utc(t, "2027-01-20T00:00:00Z")) {
					checkPeriod(t, s, p)
					p = s.Next(p)
				}
			})
		}
	}
}

func TestSeasonsNextPrev(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, Spec{Kind: Seasons, Seasons: []Season{
		{ID: "b", Start: utc(t, "2027-01-01T00:00:00Z"), End: utc(t, "2027-02-01T00:00:00Z")},
		{ID: "a", Start: utc(t, "2026-12-01T00:00:00Z"), End: utc(t, "2026-12-15T00:00:00Z")},
	}})
	a, _ := s.Parse("a")
	b, _ := s.Parse("b")
	if n := s.Next(a); n.ID != "b" {
		t.Fatalf("Next(a) = %v", n)
	}
	if n := s.Next(b); n != (Period{}) {
		t.Fatalf("Next(last) = %v, want the zero Period", n)
	}
	if p := s.Prev(b); p.ID != "a" {
		t.Fatalf("Prev(b) = %v", p)
	}
	if p := s.Prev(a); p != (Period{}) {
		t.Fatalf("Prev(first) = %v, want the zero Period", p)
	}
}

func TestCheckSeasons(t *testing.T) {
	t.Parallel()
	d := func(s string) time.Time { return utc(t, s+"T00:00:00Z") }
	for _, tc := range []struct {
		name    string
		seasons []Season
		want    string // "" when valid
	}{
		{"valid", []Season{{"s1", d("2026-12-01"), d("2026-12-15")}, {"s2", d("2026-12-15"), d("2027-01-01")}}, ""},
		{"none", nil, "at least one"},
		{"bad id", []Season{{"s:1", d("2026-12-01"), d("2026-12-15")}}, "must match"},
		{"current", []Season{{"current", d("2026-12-01"), d("2026-12-15")}}, "must match"},
		{"duplicate id", []Season{{"s1", d("2026-12-01"), d("2026-12-15")}, {"s1", d("2026-12-16"), d("2026-12-20")}}, "also seasons[0]"},
		{"empty window", []Season{{"s1", d("2026-12-01"), d("2026-12-01")}}, "before ends"},
		{"overlap", []Season{{"s1", d("2026-12-01"), d("2026-12-15")}, {"s2", d("2026-12-14"), d("2027-01-01")}}, "must not overlap"},
		{"out of order", []Season{{"s2", d("2027-01-01"), d("2027-02-01")}, {"s1", d("2026-12-01"), d("2026-12-15")}}, "must not overlap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckSeasons(tc.seasons)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckSeasons: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckSeasons = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseCron(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{"0 4 * * 1", true}, {"*/15 * * * *", true}, {"@daily", true}, {"0 0 29 2 *", true},
		{"0 4 * * 1 2026", false}, {"61 * * * *", false}, {"", false}, {"TZ=UTC 0 4 * * 1", false},
		{"CRON_TZ=Asia/Tokyo 0 4 * * 1", false}, {"@every 1h", false}, {"0 0 30 2 *", false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			if err := ParseCron(tc.expr, time.UTC); (err == nil) != tc.ok {
				t.Fatalf("ParseCron(%q) = %v, want ok=%v", tc.expr, err, tc.ok)
			}
		})
	}
}

func BenchmarkAtShapes(b *testing.B) {
	loc := mustLoc(b, "Europe/Berlin")
	at := time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)
	cr, _ := Spec{Kind: Cron, Loc: loc, Reset: "0 4 * * 1"}.Compile()
	for _, s := range []Spec{{Kind: Hour, Loc: loc}, cr} {
		b.Run(string(s.Kind), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.At(at)
			}
		})
	}
}

// TestCronDuration: a cron spec with a Duration has windows [fire, fire +
// Duration); instants in the gap to the next fire are in no period, and
// Next and Prev step over the gap.
func TestCronDuration(t *testing.T) {
	t.Parallel()
	s, err := Spec{Kind: Cron, Reset: "0 * * * *", Duration: 20 * time.Minute}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	at := func(v string) time.Time {
		tt, err := time.Parse(time.RFC3339, v)
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	tests := []struct {
		title    string
		t        string
		id       string
		end      string
		contains bool
	}{
		{"at the fire", "2026-12-05T10:00:00Z", "20261205T1000", "2026-12-05T10:20:00Z", true},
		{"inside", "2026-12-05T10:19:59Z", "20261205T1000", "2026-12-05T10:20:00Z", true},
		{"at the cut", "2026-12-05T10:20:00Z", "20261205T1000", "2026-12-05T10:20:00Z", false},
		{"in the gap", "2026-12-05T10:59:59Z", "20261205T1000", "2026-12-05T10:20:00Z", false},
		{"next fire", "2026-12-05T11:00:00Z", "20261205T1100", "2026-12-05T11:20:00Z", true},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			p := s.At(at(tc.t))
			if p.ID != tc.id || !p.End.Equal(at(tc.end)) || p.Contains(at(tc.t)) != tc.contains {
				t.Errorf("At(%s) = %s [%s, %s) contains %v; want %s ending %s contains %v",
					tc.t, p.ID, p.Start, p.End, p.Contains(at(tc.t)), tc.id, tc.end, tc.contains)
			}
			if q, err := s.Parse(p.ID); err != nil || q != p {
				t.Errorf("Parse(%s) = %+v, %v; want %+v", p.ID, q, err, p)
			}
		})
	}
	p := s.At(at("2026-12-05T10:05:00Z"))
	if n := s.Next(p); n.ID != "20261205T1100" {
		t.Errorf("Next(%s) = %s, want 20261205T1100", p.ID, n.ID)
	}
	if q := s.Prev(p); q.ID != "20261205T0900" || !q.End.Equal(at("2026-12-05T09:20:00Z")) {
		t.Errorf("Prev(%s) = %s ending %s, want 20261205T0900 ending 09:20", p.ID, q.ID, q.End)
	}
	// A duration longer than the interval changes nothing.
	long, err := Spec{Kind: Cron, Reset: "0 * * * *", Duration: 3 * time.Hour}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if p := long.At(at("2026-12-05T10:30:00Z")); !p.End.Equal(at("2026-12-05T11:00:00Z")) {
		t.Errorf("a long duration cut the window: ends %s", p.End)
	}
	for _, bad := range []Spec{
		{Kind: Cron, Reset: "0 * * * *", Duration: -time.Minute},
		{Kind: Day, Duration: time.Minute},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
}

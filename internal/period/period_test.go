package period

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests must not depend on the host's zoneinfo
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// utc parses an RFC 3339 instant.
func utc(t testing.TB, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return ts
}

func TestAt(t *testing.T) {
	t.Parallel()
	type spec struct {
		kind Kind
		loc  string
		ws   time.Weekday
	}
	var (
		dayUTC   = spec{Day, "UTC", time.Monday}
		weekUTC  = spec{Week, "UTC", time.Monday}
		weekSun  = spec{Week, "UTC", time.Sunday}
		weekSat  = spec{Week, "UTC", time.Saturday}
		monthUTC = spec{Month, "UTC", time.Monday}
		daySH    = spec{Day, "Asia/Shanghai", time.Monday}
		weekSH   = spec{Week, "Asia/Shanghai", time.Monday}
		monthSH  = spec{Month, "Asia/Shanghai", time.Monday}
		dayNY    = spec{Day, "America/New_York", time.Monday}
		weekNY   = spec{Week, "America/New_York", time.Monday}
		monthNY  = spec{Month, "America/New_York", time.Monday}
		dayBER   = spec{Day, "Europe/Berlin", time.Monday}
		weekBER  = spec{Week, "Europe/Berlin", time.Monday}
		dayHAV   = spec{Day, "America/Havana", time.Monday}
		dayAMM   = spec{Day, "Asia/Amman", time.Monday}
		dayAPIA  = spec{Day, "Pacific/Apia", time.Monday}
	)
	tests := []struct {
		name       string
		spec       spec
		at         string // instant, RFC 3339
		id         string
		start, end string // instants, RFC 3339 in UTC
		hours      float64
	}{
		// ISO weeks across year ends.
		{"2026-12-31 is in 2026-W53", weekUTC, "2026-12-31T12:00:00Z", "2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z", 168},
		{"2027-01-03 last instant is in 2026-W53", weekUTC, "2027-01-03T23:59:59.999999999Z", "2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z", 168},
		{"2027-01-04 is 2027-W01", weekUTC, "2027-01-04T00:00:00Z", "2027-W01", "2027-01-04T00:00:00Z", "2027-01-11T00:00:00Z", 168},
		{"2021-01-01 is in 2020-W53", weekUTC, "2021-01-01T08:00:00Z", "2020-W53", "2020-12-28T00:00:00Z", "2021-01-04T00:00:00Z", 168},
		{"2020-12-31 is in 2020-W53", weekUTC, "2020-12-31T23:00:00Z", "2020-W53", "2020-12-28T00:00:00Z", "2021-01-04T00:00:00Z", 168},
		{"2026-01-01 is 2026-W01 starting in 2025", weekUTC, "2026-01-01T00:00:00Z", "2026-W01", "2025-12-29T00:00:00Z", "2026-01-05T00:00:00Z", 168},
		{"2024-12-30 is 2025-W01", weekUTC, "2024-12-30T10:00:00Z", "2025-W01", "2024-12-30T00:00:00Z", "2025-01-06T00:00:00Z", 168},
		{"API example 2026-W34", weekUTC, "2026-08-20T09:00:00Z", "2026-W34", "2026-08-17T00:00:00Z", "2026-08-24T00:00:00Z", 168},
		// Other week starts: labelled by the ISO week of the fourth day.
		{"sunday week: 2027-01-02 is in 2026-W53", weekSun, "2027-01-02T23:59:59Z", "2026-W53", "2026-12-27T00:00:00Z", "2027-01-03T00:00:00Z", 168},
		{"sunday week: 2027-01-03 is 2027-W01", weekSun, "2027-01-03T00:00:00Z", "2027-W01", "2027-01-03T00:00:00Z", "2027-01-10T00:00:00Z", 168},
		{"sunday week: 2026-01-01 is 2026-W01", weekSun, "2026-01-01T00:00:00Z", "2026-W01", "2025-12-28T00:00:00Z", "2026-01-04T00:00:00Z", 168},
		{"sunday week: 2021-01-02 is 2020-W53", weekSun, "2021-01-02T12:00:00Z", "2020-W53", "2020-12-27T00:00:00Z", "2021-01-03T00:00:00Z", 168},
		{"saturday week: 2026-12-31 is 2026-W53", weekSat, "2026-12-31T00:00:00Z", "2026-W53", "2026-12-26T00:00:00Z", "2027-01-02T00:00:00Z", 168},
		{"saturday week: 2027-01-02 is 2027-W01", weekSat, "2027-01-02T00:00:00Z", "2027-W01", "2027-01-02T00:00:00Z", "2027-01-09T00:00:00Z", 168},
		// Days and months in UTC.
		{"day", dayUTC, "2026-08-20T13:14:15Z", "2026-08-20", "2026-08-20T00:00:00Z", "2026-08-21T00:00:00Z", 24},
		{"leap day 2028", dayUTC, "2028-02-29T23:59:59Z", "2028-02-29", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z", 24},
		{"february of leap year 2028", monthUTC, "2028-02-29T23:59:59.999999999Z", "2028-02", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z", 29 * 24},
		{"february of 2027", monthUTC, "2027-02-14T00:00:00Z", "2027-02", "2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z", 28 * 24},
		{"december rolls into next year", monthUTC, "2026-12-31T23:59:59Z", "2026-12", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 31 * 24},
		{"first instant of a month", monthUTC, "2027-01-01T00:00:00Z", "2027-01", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z", 31 * 24},
		// Asia/Shanghai (UTC+8) where the local date differs from UTC.
		{"shanghai day is already the 20th", daySH, "2026-08-19T16:30:00Z", "2026-08-20", "2026-08-19T16:00:00Z", "2026-08-20T16:00:00Z", 24},
		{"utc day is still the 19th", dayUTC, "2026-08-19T16:30:00Z", "2026-08-19", "2026-08-19T00:00:00Z", "2026-08-20T00:00:00Z", 24},
		{"shanghai last instant of the 19th", daySH, "2026-08-19T15:59:59.999999999Z", "2026-08-19", "2026-08-18T16:00:00Z", "2026-08-19T16:00:00Z", 24},
		{"shanghai month is already september", monthSH, "2026-08-31T17:00:00Z", "2026-09", "2026-08-31T16:00:00Z", "2026-09-30T16:00:00Z", 30 * 24},
		{"shanghai week is already 2027-W01", weekSH, "2027-01-03T16:00:00Z", "2027-W01", "2027-01-03T16:00:00Z", "2027-01-10T16:00:00Z", 168},
		{"utc week is still 2026-W53", weekUTC, "2027-01-03T16:00:00Z", "2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z", 168},
		// America/New_York: spring forward 2026-03-08 (23 h), fall back 2026-11-01 (25 h).
		{"NY just before spring-forward day", dayNY, "2026-03-08T04:59:59.999999999Z", "2026-03-07", "2026-03-07T05:00:00Z", "2026-03-08T05:00:00Z", 24},
		{"NY spring-forward day starts", dayNY, "2026-03-08T05:00:00Z", "2026-03-08", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 23},
		{"NY spring-forward day last instant", dayNY, "2026-03-09T03:59:59.999999999Z", "2026-03-08", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 23},
		{"NY day after spring forward", dayNY, "2026-03-09T04:00:00Z", "2026-03-09", "2026-03-09T04:00:00Z", "2026-03-10T04:00:00Z", 24},
		{"NY just before fall-back day", dayNY, "2026-11-01T03:59:59.999999999Z", "2026-10-31", "2026-10-31T04:00:00Z", "2026-11-01T04:00:00Z", 24},
		{"NY fall-back day starts", dayNY, "2026-11-01T04:00:00Z", "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 25},
		{"NY fall-back day repeated hour", dayNY, "2026-11-01T06:30:00Z", "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 25},
		{"NY fall-back day last instant", dayNY, "2026-11-02T04:59:59.999999999Z", "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 25},
		{"NY day after fall back", dayNY, "2026-11-02T05:00:00Z", "2026-11-02", "2026-11-02T05:00:00Z", "2026-11-03T05:00:00Z", 24},
		{"NY week with spring forward", weekNY, "2026-03-08T12:00:00Z", "2026-W10", "2026-03-02T05:00:00Z", "2026-03-09T04:00:00Z", 167},
		{"NY week with fall back", weekNY, "2026-10-30T12:00:00Z", "2026-W44", "2026-10-26T04:00:00Z", "2026-11-02T05:00:00Z", 169},
		{"NY march", monthNY, "2026-03-15T00:00:00Z", "2026-03", "2026-03-01T05:00:00Z", "2026-04-01T04:00:00Z", 31*24 - 1},
		// Europe/Berlin: spring forward 2026-03-29 (23 h), fall back 2026-10-25 (25 h).
		{"Berlin just before spring-forward day", dayBER, "2026-03-28T22:59:59.999999999Z", "2026-03-28", "2026-03-27T23:00:00Z", "2026-03-28T23:00:00Z", 24},
		{"Berlin spring-forward day starts", dayBER, "2026-03-28T23:00:00Z", "2026-03-29", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 23},
		{"Berlin spring-forward day last instant", dayBER, "2026-03-29T21:59:59.999999999Z", "2026-03-29", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 23},
		{"Berlin fall-back day starts", dayBER, "2026-10-24T22:00:00Z", "2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 25},
		{"Berlin fall-back day last instant", dayBER, "2026-10-25T22:59:59.999999999Z", "2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 25},
		{"Berlin day after fall back", dayBER, "2026-10-25T23:00:00Z", "2026-10-26", "2026-10-25T23:00:00Z", "2026-10-26T23:00:00Z", 24},
		{"Berlin week with fall back", weekBER, "2026-10-25T12:00:00Z", "2026-W43", "2026-10-18T22:00:00Z", "2026-10-25T23:00:00Z", 169},
		// Transitions at midnight, where time.Date alone picks the wrong instant.
		{"Havana midnight skipped: day starts at 01:00", dayHAV, "2024-03-10T05:00:00Z", "2024-03-10", "2024-03-10T05:00:00Z", "2024-03-11T04:00:00Z", 23},
		{"Havana day before a skipped midnight", dayHAV, "2024-03-10T04:59:59.999999999Z", "2024-03-09", "2024-03-09T05:00:00Z", "2024-03-10T05:00:00Z", 24},
		{"Havana midnight repeated", dayHAV, "2024-11-03T04:30:00Z", "2024-11-03", "2024-11-03T04:00:00Z", "2024-11-04T05:00:00Z", 25},
		{"Amman midnight repeated: day starts at the first", dayAMM, "2021-10-28T21:30:00Z", "2021-10-29", "2021-10-28T21:00:00Z", "2021-10-29T22:00:00Z", 25},
		{"Amman day before a repeated midnight", dayAMM, "2021-10-28T20:59:59.999999999Z", "2021-10-28", "2021-10-27T21:00:00Z", "2021-10-28T21:00:00Z", 24},
		{"Apia day before the skipped 2011-12-30", dayAPIA, "2011-12-30T09:59:59Z", "2011-12-29", "2011-12-29T10:00:00Z", "2011-12-30T10:00:00Z", 24},
		{"Apia skips 2011-12-30", dayAPIA, "2011-12-30T10:00:00Z", "2011-12-31", "2011-12-30T10:00:00Z", "2011-12-31T10:00:00Z", 24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, tc.spec.loc)
			s := Spec{Kind: tc.spec.kind, Loc: loc, WeekStart: tc.spec.ws}
			at := utc(t, tc.at)
			p := s.At(at)
			if p.ID != tc.id {
				t.Errorf("ID = %q, want %q", p.ID, tc.id)
			}
			if want := utc(t, tc.start); !p.Start.Equal(want) {
				t.Errorf("Start = %v, want %v", p.Start, want.In(loc))
			}
			if want := utc(t, tc.end); !p.End.Equal(want) {
				t.Errorf("End = %v, want %v", p.End, want.In(loc))
			}
			if got := p.End.Sub(p.Start).Hours(); got != tc.hours {
				t.Errorf("length = %vh, want %vh", got, tc.hours)
			}
			if p.Start.Location() != loc || p.End.Location() != loc {
				t.Errorf("Start/End in %v/%v, want %v", p.Start.Location(), p.End.Location(), loc)
			}
			if !p.Contains(at) {
				t.Errorf("period %v does not contain %v", p, at)
			}
			checkPeriod(t, s, p)
		})
	}
}

// checkPeriod checks the invariants of a period of s: Parse returns it, its
// first and last instants are in it, and its neighbours abut it.
func checkPeriod(t *testing.T, s Spec, p Period) {
	t.Helper()
	got, err := s.Parse(p.ID)
	if err != nil {
		t.Fatalf("Parse(%q): %v", p.ID, err)
	}
	if !samePeriod(got, p) {
		t.Fatalf("Parse(%q) = %v, want %v", p.ID, got, p)
	}
	if s.Kind == All {
		return
	}
	if !p.Start.Before(p.End) {
		t.Fatalf("%s: Start %v not before End %v", p.ID, p.Start, p.End)
	}
	if id := s.At(p.Start).ID; id != p.ID {
		t.Fatalf("At(Start of %s) = %s", p.ID, id)
	}
	if id := s.At(p.End.Add(-time.Nanosecond)).ID; id != p.ID {
		t.Fatalf("At(End-1ns of %s) = %s", p.ID, id)
	}
	next, prev := s.Next(p), s.Prev(p)
	if !next.Start.Equal(p.End) || next.ID <= p.ID {
		t.Fatalf("Next(%s) = %v, want a later id starting at %v", p.ID, next, p.End)
	}
	if !prev.End.Equal(p.Start) || prev.ID >= p.ID {
		t.Fatalf("Prev(%s) = %v, want an earlier id ending at %v", p.ID, prev, p.Start)
	}
}

func samePeriod(a, b Period) bool {
	return a.ID == b.ID && a.Start.Equal(b.Start) && a.End.Equal(b.End) &&
		a.Start.Location() == b.Start.Location() && a.End.Location() == b.End.Location()
}

func TestAll(t *testing.T) {
	t.Parallel()
	s := Spec{Kind: All, Loc: mustLoc(t, "Asia/Shanghai")}
	for _, at := range []time.Time{{}, utc(t, "2026-12-31T23:59:59Z"), utc(t, "9999-01-01T00:00:00Z")} {
		p := s.At(at)
		if p.ID != "all" || !p.Start.IsZero() || !p.End.IsZero() || !p.Contains(at) {
			t.Fatalf("At(%v) = %+v, want the all period", at, p)
		}
		if n := s.Next(p); n != p {
			t.Fatalf("Next(all) = %+v", n)
		}
		if n := s.Prev(p); n != p {
			t.Fatalf("Prev(all) = %+v", n)
		}
	}
	if p, err := s.Parse("all"); err != nil || p != (Period{ID: "all"}) {
		t.Fatalf(`Parse("all") = %+v, %v`, p, err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       Spec
		id         string
		start, end string // RFC 3339; empty for errors
	}{
		{"iso week 53 of 2026", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"},
		{"iso week 53 of 2020", Spec{Kind: Week, WeekStart: time.Monday}, "2020-W53", "2020-12-28T00:00:00Z", "2021-01-04T00:00:00Z"},
		{"iso week 1 of 2027", Spec{Kind: Week, WeekStart: time.Monday}, "2027-W01", "2027-01-04T00:00:00Z", "2027-01-11T00:00:00Z"},
		{"iso week 1 starting in the year before", Spec{Kind: Week, WeekStart: time.Monday}, "2025-W01", "2024-12-30T00:00:00Z", "2025-01-06T00:00:00Z"},
		{"sunday week 53 of 2026", Spec{Kind: Week, WeekStart: time.Sunday}, "2026-W53", "2026-12-27T00:00:00Z", "2027-01-03T00:00:00Z"},
		{"sunday week 1 of 2027", Spec{Kind: Week, WeekStart: time.Sunday}, "2027-W01", "2027-01-03T00:00:00Z", "2027-01-10T00:00:00Z"},
		{"thursday week 1 of 2026", Spec{Kind: Week, WeekStart: time.Thursday}, "2026-W01", "2026-01-01T00:00:00Z", "2026-01-08T00:00:00Z"},
		{"friday week 1 of 2026", Spec{Kind: Week, WeekStart: time.Friday}, "2026-W01", "2025-12-26T00:00:00Z", "2026-01-02T00:00:00Z"},
		{"week in shanghai", Spec{Kind: Week, Loc: mustLoc(t, "Asia/Shanghai"), WeekStart: time.Monday}, "2027-W01", "2027-01-03T16:00:00Z", "2027-01-10T16:00:00Z"},
		{"leap day", Spec{Kind: Day}, "2028-02-29", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"},
		{"day in new york", Spec{Kind: Day, Loc: mustLoc(t, "America/New_York")}, "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"},
		{"leap february", Spec{Kind: Month}, "2028-02", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{"december", Spec{Kind: Month}, "2026-12", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"month in berlin", Spec{Kind: Month, Loc: mustLoc(t, "Europe/Berlin")}, "2026-10", "2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z"},

		{"week: one-digit week", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W5", "", ""},
		{"week: three-digit week", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W053", "", ""},
		{"week: W00", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W00", "", ""},
		{"week: W53 in a 52-week year", Spec{Kind: Week, WeekStart: time.Monday}, "2027-W53", "", ""},
		{"week: W53 in a 52-week year, sunday start", Spec{Kind: Week, WeekStart: time.Sunday}, "2027-W53", "", ""},
		{"week: W54", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W54", "", ""},
		{"week: W99", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W99", "", ""},
		{"week: lower-case w", Spec{Kind: Week, WeekStart: time.Monday}, "2026-w05", "", ""},
		{"week: no dash", Spec{Kind: Week, WeekStart: time.Monday}, "2026W05", "", ""},
		{"week: two-digit year", Spec{Kind: Week, WeekStart: time.Monday}, "26-W05", "", ""},
		{"week: signed year", Spec{Kind: Week, WeekStart: time.Monday}, "+026-W05", "", ""},
		{"week: signed week", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W+5", "", ""},
		{"week: ISO week date", Spec{Kind: Week, WeekStart: time.Monday}, "2026-W05-1", "", ""},
		{"week: all", Spec{Kind: Week, WeekStart: time.Monday}, "all", "", ""},
		{"week: a day id", Spec{Kind: Week, WeekStart: time.Monday}, "2026-08-20", "", ""},
		{"week: empty", Spec{Kind: Week, WeekStart: time.Monday}, "", "", ""},
		{"week: surrounding space", Spec{Kind: Week, WeekStart: time.Monday}, " 2026-W05", "", ""},
		{"day: february 30", Spec{Kind: Day}, "2026-02-30", "", ""},
		{"day: february 29 in a common year", Spec{Kind: Day}, "2027-02-29", "", ""},
		{"day: month 13", Spec{Kind: Day}, "2026-13-01", "", ""},
		{"day: month 00", Spec{Kind: Day}, "2026-00-10", "", ""},
		{"day: day 00", Spec{Kind: Day}, "2026-08-00", "", ""},
		{"day: day 32", Spec{Kind: Day}, "2026-01-32", "", ""},
		{"day: unpadded", Spec{Kind: Day}, "2026-8-20", "", ""},
		{"day: slashes", Spec{Kind: Day}, "2026/08/20", "", ""},
		{"day: with time", Spec{Kind: Day}, "2026-08-20T00:00:00Z", "", ""},
		{"day: a month id", Spec{Kind: Day}, "2026-08", "", ""},
		{"day: skipped local date", Spec{Kind: Day, Loc: mustLoc(t, "Pacific/Apia")}, "2011-12-30", "", ""},
		{"month: 13", Spec{Kind: Month}, "2026-13", "", ""},
		{"month: 00", Spec{Kind: Month}, "2026-00", "", ""},
		{"month: unpadded", Spec{Kind: Month}, "2026-8", "", ""},
		{"month: a day id", Spec{Kind: Month}, "2026-08-01", "", ""},
		{"month: all", Spec{Kind: Month}, "all", "", ""},
		{"all: upper case", Spec{Kind: All}, "ALL", "", ""},
		{"all: a month id", Spec{Kind: All}, "2026-08", "", ""},
		{"all: empty", Spec{Kind: All}, "", "", ""},
		{"day: current is not an id", Spec{Kind: Day}, "current", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := tc.spec.Parse(tc.id)
			if tc.start == "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v, want an error", tc.id, p)
				}
				if !errors.Is(err, ErrInvalidID) {
					t.Fatalf("Parse(%q) error %v does not wrap ErrInvalidID", tc.id, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.id, err)
			}
			if p.ID != tc.id || !p.Start.Equal(utc(t, tc.start)) || !p.End.Equal(utc(t, tc.end)) {
				t.Fatalf("Parse(%q) = %v, want [%s, %s)", tc.id, p, tc.start, tc.end)
			}
			checkPeriod(t, tc.spec, p)
		})
	}
}

// zones covers UTC, fixed offsets either side of UTC with odd minutes,
// ordinary DST in both hemispheres and transitions at midnight.
var zones = []string{
	"UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Asia/Kathmandu",
	"Pacific/Chatham", "Australia/Lord_Howe", "America/Santiago", "America/Havana",
	"Asia/Amman", "Asia/Beirut", "Pacific/Apia", "Pacific/Kiritimati", "Pacific/Pago_Pago",
}

func allSpecs(t testing.TB) []Spec {
	var specs []Spec
	for _, z := range zones {
		loc := mustLoc(t, z)
		specs = append(specs, Spec{Kind: Day, Loc: loc}, Spec{Kind: Month, Loc: loc}, Spec{Kind: All, Loc: loc})
		for ws := time.Sunday; ws <= time.Saturday; ws++ {
			specs = append(specs, Spec{Kind: Week, Loc: loc, WeekStart: ws})
		}
	}
	return specs
}

func TestRoundTripRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2026, 53))
	lo := utc(t, "2020-01-01T00:00:00Z").UnixNano()
	hi := utc(t, "2033-01-01T00:00:00Z").UnixNano()
	for _, s := range allSpecs(t) {
		for range 400 {
			at := time.Unix(0, lo+rng.Int64N(hi-lo))
			p := s.At(at)
			if !p.Contains(at) {
				t.Fatalf("%+v: At(%v) = %v does not contain it", s, at, p)
			}
			got, err := s.Parse(p.ID)
			if err != nil {
				t.Fatalf("%+v: Parse(At(%v).ID = %q): %v", s, at, p.ID, err)
			}
			if !samePeriod(got, p) {
				t.Fatalf("%+v: Parse(%q) = %v, want %v", s, p.ID, got, p)
			}
		}
	}
}

// TestContiguous walks every period from 2019 to 2033 and checks that they
// tile time: each starts where the previous one ends, ids strictly increase
// and every id parses back to its period.
func TestContiguous(t *testing.T) {
	t.Parallel()
	end := utc(t, "2033-01-10T00:00:00Z")
	for _, s := range allSpecs(t) {
		if s.Kind == All {
			continue
		}
		p := s.At(utc(t, "2019-12-20T00:00:00Z"))
		for p.Start.Before(end) {
			checkPeriod(t, s, p)
			p = s.Next(p)
		}
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Kind
		ok   bool
	}{
		{"day", Day, true}, {"week", Week, true}, {"month", Month, true}, {"all", All, true},
		{"", "", false}, {"Day", "", false}, {"weekly", "", false}, {"year", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKind(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseKind(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}

func TestParseWeekday(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Weekday
		ok   bool
	}{
		{"monday", time.Monday, true}, {"tuesday", time.Tuesday, true}, {"wednesday", time.Wednesday, true},
		{"thursday", time.Thursday, true}, {"friday", time.Friday, true}, {"saturday", time.Saturday, true},
		{"sunday", time.Sunday, true}, {"Sunday", time.Sunday, true}, {"MONDAY", time.Monday, true},
		{"", 0, false}, {"mon", 0, false}, {"1", 0, false}, {"monday ", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseWeekday(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseWeekday(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"day", Spec{Kind: Day}, true},
		{"week sunday", Spec{Kind: Week, WeekStart: time.Sunday}, true},
		{"all with location", Spec{Kind: All, Loc: time.UTC}, true},
		{"empty kind", Spec{}, false},
		{"unknown kind", Spec{Kind: "year"}, false},
		{"week start out of range", Spec{Kind: Week, WeekStart: 7}, false},
		{"negative week start", Spec{Kind: Week, WeekStart: -1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.spec.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				if _, err := tc.spec.Parse("all"); err == nil {
					t.Fatalf("Parse on an invalid spec succeeded")
				}
				defer func() {
					if recover() == nil {
						t.Fatalf("At on an invalid spec did not panic")
					}
				}()
				tc.spec.At(time.Now())
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []struct {
		id             string
		kind, ws, zone uint8
	}{
		{"2026-W53", 1, 1, 0}, {"2027-W01", 1, 0, 2}, {"2020-W53", 1, 6, 3}, {"2027-W53", 1, 1, 0},
		{"2026-08-20", 0, 0, 1}, {"2028-02-29", 0, 0, 0}, {"2026-02-30", 0, 0, 0}, {"2011-12-30", 0, 0, 11},
		{"2024-03-10", 0, 0, 8}, {"2021-10-29", 0, 0, 9}, {"2028-02", 2, 0, 3}, {"all", 3, 0, 0},
		{"0000-W01", 1, 3, 5}, {"9999-12", 2, 0, 6}, {"", 1, 1, 1}, {"2026-W5", 1, 1, 1},
	} {
		f.Add(seed.id, seed.kind, seed.ws, seed.zone)
	}
	kinds := []Kind{Day, Week, Month, All, Hour}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = mustLoc(f, z)
	}
	f.Fuzz(func(t *testing.T, id string, kind, ws, zone uint8) {
		s := Spec{
			Kind:      kinds[int(kind)%len(kinds)],
			Loc:       locs[int(zone)%len(locs)],
			WeekStart: time.Weekday(ws % 7),
		}
		p, err := s.Parse(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalidID", id, err)
			}
			return
		}
		if p.ID != id {
			t.Fatalf("Parse(%q).ID = %q", id, p.ID)
		}
		if s.Kind == All {
			if p != (Period{ID: AllID}) {
				t.Fatalf("Parse(%q) = %+v", id, p)
			}
			return
		}
		if !p.Start.Before(p.End) {
			t.Fatalf("Parse(%q) = %v: empty", id, p)
		}
		if got := s.At(p.Start).ID; got != id {
			t.Fatalf("At(Start of %q) = %q", id, got)
		}
		if got := s.At(p.End.Add(-time.Nanosecond)).ID; got != id {
			t.Fatalf("At(End-1ns of %q) = %q", id, got)
		}
		if got := s.At(p.Start.Add(-time.Nanosecond)).ID; got == id {
			t.Fatalf("At(Start-1ns of %q) = %q too", id, got)
		}
		if got := s.At(p.End).ID; got == id {
			t.Fatalf("At(End of %q) = %q too", id, got)
		}
	})
}

func BenchmarkAt(b *testing.B) {
	loc := mustLoc(b, "Europe/Berlin")
	at := time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)
	for _, k := range []Kind{Day, Week, Month} {
		s := Spec{Kind: k, Loc: loc, WeekStart: time.Monday}
		b.Run(string(k), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.At(at)
			}
		})
	}
}

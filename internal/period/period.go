// Package period maps instants to period ids and back. It is the one
// server-side function of (time, family timezone, week start) that names
// periods; clients never build period strings.
//
// Ids by kind:
//
//	day    2026-08-20  the local date in the spec's location
//	week   2026-W34    see below
//	month  2026-08
//	all    all         one period that never ends
//	hour, seasons, cron: see shapes.go
//
// A week runs for 7 local days from its WeekStart day. It is labelled with
// the ISO 8601 year and week number of its fourth day, so each week is
// named after the ISO week holding most of its days. With WeekStart Monday
// this is exactly ISO 8601 week numbering (the fourth day is the Thursday).
//
// A period is the half-open interval [Start, End) of instants whose local
// date falls in it. Start is the first instant of its first local day: local
// midnight, or the instant the day begins when a time zone transition skips
// or repeats midnight. End is the next period's Start.
//
// It imports the standard library and robfig/cron (cron schedules) only; it
// must not import any other rankgate package, Redis or net/http.
package period

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is how long a family's periods last.
type Kind string

// The period kinds.
const (
	Day   Kind = "day"
	Week  Kind = "week"
	Month Kind = "month"
	All   Kind = "all"
)

// AllID is the id of the only period of kind All.
const AllID = "all"

// ErrInvalidID is wrapped by every error Parse returns.
var ErrInvalidID = errors.New("invalid period id")

// ParseKind parses "day", "week", "month" or "all".
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Day, Week, Month, All, Hour, Seasons, Cron:
		return k, nil
	}
	return "", fmt.Errorf("unknown period kind %q (want hour, day, week, month, all, seasons or cron)", s)
}

// ParseWeekday parses an English weekday name, "monday" to "sunday", in any
// letter case.
func ParseWeekday(s string) (time.Weekday, error) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.EqualFold(s, d.String()) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown weekday %q (want monday to sunday)", s)
}

// Spec defines a family's periods. A nil Loc means UTC. WeekStart is only
// used by Week specs, Seasons by Seasons specs (sorted by Start, not
// overlapping: see CheckSeasons) and Reset, a cron expression, by Cron specs
// (see ParseCron; Compile parses it once).
type Spec struct {
	Kind      Kind
	Loc       *time.Location
	WeekStart time.Weekday
	Seasons   []Season
	Reset     string
	// Duration (Cron only, 0: none) cuts each window short: it ends at
	// its start + Duration when that comes before the next fire, and the
	// instants from there to the next fire belong to no period (a
	// recurring tournament that runs an hour after each reset).
	Duration time.Duration

	cron *cronSched // set by Compile
}

// Period is the interval [Start, End) of one period, with Start and End in
// the spec's location. The All period has zero Start and End: it began
// before any instant and End.IsZero() means it never ends.
type Period struct {
	ID         string
	Start, End time.Time
}

// Contains reports whether t falls in p.
func (p Period) Contains(t time.Time) bool {
	if p.ID == AllID && p.Start.IsZero() && p.End.IsZero() {
		return true
	}
	return !t.Before(p.Start) && t.Before(p.End)
}

// Validate reports whether s is usable: a known Kind and, for Week, a valid
// WeekStart. At panics on a spec that Validate rejects.
func (s Spec) Validate() error {
	if _, err := ParseKind(string(s.Kind)); err != nil {
		return err
	}
	if s.Kind == Week && (s.WeekStart < time.Sunday || s.WeekStart > time.Saturday) {
		return fmt.Errorf("invalid week start %d", s.WeekStart)
	}
	if s.Duration < 0 || (s.Duration > 0 && s.Kind != Cron) {
		return fmt.Errorf("a window duration (%s) needs a cron spec and must be > 0", s.Duration)
	}
	switch s.Kind {
	case Seasons:
		return CheckSeasons(s.Seasons)
	case Cron:
		if s.cron != nil {
			return nil
		}
		return ParseCron(s.Reset, s.loc())
	}
	return nil
}

func (s Spec) loc() *time.Location {
	if s.Loc == nil {
		return time.UTC
	}
	return s.Loc
}

// At returns the period containing t; for Seasons, see shapes.go.
func (s Spec) At(t time.Time) Period {
	loc := s.loc()
	y, m, d := t.In(loc).Date()
	var buf [16]byte // the id is built here, then copied into one string
	switch s.Kind {
	case Day:
		return Period{
			ID:    string(appendDate(buf[:0], y, m, d)),
			Start: startOfDay(y, m, d, loc),
			End:   startOfDay(y, m, d+1, loc),
		}
	case Week:
		if s.WeekStart < time.Sunday || s.WeekStart > time.Saturday {
			break
		}
		// Days since the week started; date arithmetic on civil dates
		// happens in UTC, where every day has 24 hours.
		back := (int(civil(y, m, d).Weekday()) - int(s.WeekStart) + 7) % 7
		first := civil(y, m, d-back)
		iy, iw := first.AddDate(0, 0, 3).ISOWeek()
		fy, fm, fd := first.Date()
		return Period{
			ID:    string(appendWeek(buf[:0], iy, iw)),
			Start: startOfDay(fy, fm, fd, loc),
			End:   startOfDay(fy, fm, fd+7, loc),
		}
	case Month:
		return Period{
			ID:    string(appendMonth(buf[:0], y, m)),
			Start: startOfDay(y, m, 1, loc),
			End:   startOfDay(y, m+1, 1, loc),
		}
	case All:
		return Period{ID: AllID}
	case Hour:
		return s.hourAt(t)
	case Seasons:
		if len(s.Seasons) > 0 {
			return s.seasonPeriod(s.season(t))
		}
	case Cron:
		return s.cronSched().at(t)
	}
	panic(fmt.Sprintf("period: At on invalid spec %+v", s))
}

// Parse returns the period of s named id. The id must be canonical: exactly
// what At returns for some instant. Anything else (a malformed or unpadded
// id, a date that does not exist, week 00, week 53 of a year with 52 ISO
// weeks, a local day that a time zone transition skipped, an id of another
// kind) is an error wrapping ErrInvalidID.
func (s Spec) Parse(id string) (Period, error) {
	if err := s.Validate(); err != nil {
		return Period{}, err
	}
	loc := s.loc()
	var t time.Time // an instant in the named period, if there is one
	switch s.Kind {
	case Day:
		// YYYY-MM-DD
		if len(id) != 10 || id[4] != '-' || id[7] != '-' {
			return Period{}, s.invalid(id, "want YYYY-MM-DD")
		}
		y, ok1 := digits(id[0:4])
		m, ok2 := digits(id[5:7])
		d, ok3 := digits(id[8:10])
		if !ok1 || !ok2 || !ok3 {
			return Period{}, s.invalid(id, "want YYYY-MM-DD")
		}
		if m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) {
			return Period{}, s.invalid(id, "no such date")
		}
		t = startOfDay(y, time.Month(m), d, loc)
	case Week:
		// YYYY-Www
		if len(id) != 8 || id[4] != '-' || id[5] != 'W' {
			return Period{}, s.invalid(id, "want YYYY-Www")
		}
		y, ok1 := digits(id[0:4])
		w, ok2 := digits(id[6:8])
		if !ok1 || !ok2 {
			return Period{}, s.invalid(id, "want YYYY-Www")
		}
		if w < 1 || w > isoWeeks(y) {
			return Period{}, s.invalid(id, fmt.Sprintf("%04d has ISO weeks 01 to %02d", y, isoWeeks(y)))
		}
		// The week is labelled by its fourth day, the day of ISO week
		// (y, w) whose weekday is WeekStart+3.
		label := (int(s.WeekStart) + 3) % 7
		fourth := civil(y, time.January, 4) // always in ISO week 1
		monday := fourth.AddDate(0, 0, -((int(fourth.Weekday())+6)%7)+7*(w-1))
		first := monday.AddDate(0, 0, (label+6)%7-3)
		fy, fm, fd := first.Date()
		t = startOfDay(fy, fm, fd, loc)
	case Month:
		// YYYY-MM
		if len(id) != 7 || id[4] != '-' {
			return Period{}, s.invalid(id, "want YYYY-MM")
		}
		y, ok1 := digits(id[0:4])
		m, ok2 := digits(id[5:7])
		if !ok1 || !ok2 {
			return Period{}, s.invalid(id, "want YYYY-MM")
		}
		if m < 1 || m > 12 {
			return Period{}, s.invalid(id, "no such month")
		}
		t = startOfDay(y, time.Month(m), 1, loc)
	case All:
		if id != AllID {
			return Period{}, s.invalid(id, `want "all"`)
		}
		return Period{ID: AllID}, nil
	case Hour:
		var err error
		if t, err = s.parseHour(id); err != nil {
			return Period{}, err
		}
	case Cron:
		t, err := s.parseCron(id)
		if err != nil {
			return Period{}, err
		}
		// A repeated local minute has two instants: try both.
		for _, d := range []time.Duration{0, -30 * time.Minute, -time.Hour, -2 * time.Hour, 30 * time.Minute, time.Hour} {
			c := t.Add(d)
			if c.In(loc).Format(cronIDLayout) != id {
				continue
			}
			if p := s.At(c); p.ID == id {
				return p, nil
			}
		}
		return Period{}, s.invalid(id, "no window of "+s.Reset+" starts at that local minute in "+loc.String())
	case Seasons:
		for i := range s.Seasons {
			if s.Seasons[i].ID == id {
				return s.seasonPeriod(i), nil
			}
		}
		return Period{}, s.invalid(id, "no such season")
	}
	// Canonical means At names it; this also rejects a local day that
	// does not exist in loc, which startOfDay maps to the next day.
	p := s.At(t)
	if p.ID != id {
		return Period{}, s.invalid(id, "no such local date in "+loc.String())
	}
	return p, nil
}

func (s Spec) invalid(id, why string) error {
	return fmt.Errorf("%w: %q is not a %s period: %s", ErrInvalidID, id, s.Kind, why)
}

// startOfDay returns the first instant whose local date in loc is y-m-d
// (normalized as time.Date does). That is local midnight, unless a time zone
// transition skips midnight (the day then starts at the transition) or
// repeats it (the day starts at the first midnight). time.Date alone is not
// enough: for a skipped midnight it may return an instant of the day before,
// and for a repeated one it may return the second midnight. If the whole day
// is skipped, it returns the first instant after it.
func startOfDay(y int, m time.Month, d int, loc *time.Location) time.Time {
	want := civil(y, m, d)
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	// A few rounds suffice; each round handles one transition.
	for range 4 {
		ty, tm, td := t.Date()
		switch got := civil(ty, tm, td); {
		case got.Before(want):
			// Midnight fell in a gap and time.Date resolved it to the
			// previous day: the day begins when the gap ends.
			_, end := t.ZoneBounds()
			if end.IsZero() || !end.After(t) {
				return t
			}
			t = end
		case got.After(want):
			return t
		default:
			before := t.Add(-time.Nanosecond)
			by, bm, bd := before.Date()
			if by != ty || bm != tm || bd != td {
				return t // t is the first instant of the day
			}
			// Midnight is repeated and t is a later one: the day
			// began in the zone period before, at its local midnight.
			start, _ := t.ZoneBounds()
			if start.IsZero() {
				return t
			}
			before = start.Add(-time.Nanosecond)
			h, mi, sec := before.Clock()
			t = before.Add(-(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute +
				time.Duration(sec)*time.Second + time.Duration(before.Nanosecond())))
		}
	}
	return t
}

// civil returns the date y-m-d (normalized) at midnight UTC, for arithmetic
// on calendar dates.
func civil(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func daysIn(y int, m time.Month) int {
	return civil(y, m+1, 0).Day()
}

// isoWeeks returns the number of ISO 8601 weeks in ISO year y (52 or 53);
// 28 December is always in the last one.
func isoWeeks(y int) int {
	_, w := civil(y, time.December, 28).ISOWeek()
	return w
}

// digits parses a string of ASCII digits (no sign) as a decimal number.
func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// appendInt appends n zero-padded to width digits; wider numbers and
// negative ones are appended as they are (ids that Parse then rejects, as
// such years are out of its range).
func appendInt(b []byte, n, width int) []byte {
	if n < 0 {
		return fmt.Appendf(b, "%d", n)
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 || len(buf)-i < width {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, buf[i:]...)
}

func appendDate(b []byte, y int, m time.Month, d int) []byte {
	b = appendMonth(b, y, m)
	b = append(b, '-')
	return appendInt(b, d, 2)
}

func appendMonth(b []byte, y int, m time.Month) []byte {
	b = appendInt(b, y, 4)
	b = append(b, '-')
	return appendInt(b, int(m), 2)
}

func appendWeek(b []byte, y, w int) []byte {
	b = appendInt(b, y, 4)
	b = append(b, '-', 'W')
	return appendInt(b, w, 2)
}

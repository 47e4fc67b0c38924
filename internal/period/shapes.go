package period

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
)

// The period kinds asked for by live games beside day, week, month and all:
//
//	hour     2026-12-01T10   the local hour in the spec's location
//	seasons  s1              explicit windows; ids are the configured ones
//	cron     20261207T0400   windows between the fires of a 5-field cron
//	                         expression in the spec's location, named after
//	                         the local minute they start
//
// An hour is the half-open interval of instants whose local date and hour
// are its own: an hour that a time zone transition skips has no period, and
// one that it repeats is one period of two hours (as a day of 25 hours is one
// day). A cron window starts at a fire and ends at the next fire with another
// id, so a fire repeated by a transition does not split a window. Seasons
// leave gaps: an instant between two seasons (or before the first, after the
// last) belongs to no period; At answers the season before it (the first
// season when there is none), and Contains tells whether the instant is in it.
const (
	Hour    Kind = "hour"
	Seasons Kind = "seasons"
	Cron    Kind = "cron"
)

// Season is one explicit window of a Seasons spec: [Start, End).
type Season struct {
	ID         string
	Start, End time.Time
}

// seasonIDRe: season ids become part of Redis keys, outside and inside hash
// tags, so no '{', '}', ':' or spaces.
var seasonIDRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// ValidSeasonID reports whether id may name a season.
func ValidSeasonID(id string) bool { return seasonIDRe.MatchString(id) && id != "current" }

// CheckSeasons checks that seasons have valid, distinct ids, that each starts
// before it ends and that they are sorted by start without overlapping. The
// error names the first offending season by index.
func CheckSeasons(seasons []Season) error {
	if len(seasons) == 0 {
		return fmt.Errorf("at least one season is required")
	}
	ids := make(map[string]int, len(seasons))
	for i, s := range seasons {
		if !ValidSeasonID(s.ID) {
			return fmt.Errorf("seasons[%d].id %q must match [A-Za-z0-9_.-]{1,32} and not be \"current\"", i, s.ID)
		}
		if j, dup := ids[s.ID]; dup {
			return fmt.Errorf("seasons[%d].id %q is also seasons[%d].id", i, s.ID, j)
		}
		ids[s.ID] = i
		if s.Start.IsZero() || s.End.IsZero() || !s.Start.Before(s.End) {
			return fmt.Errorf("seasons[%d] (%s): starts must be before ends", i, s.ID)
		}
		if i > 0 && s.Start.Before(seasons[i-1].End) {
			return fmt.Errorf("seasons[%d] (%s) starts at %s, before seasons[%d] (%s) ends at %s: seasons must be in order and must not overlap",
				i, s.ID, s.Start.UTC().Format(time.RFC3339), i-1, seasons[i-1].ID, seasons[i-1].End.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// cronIDLayout names a cron window after its local start minute.
const cronIDLayout = "20060102T1504"

// cronSched is a compiled cron expression with the last window it computed
// (the hot path asks for the current window over and over).
type cronSched struct {
	expr  string
	sched cron.Schedule
	loc   *time.Location
	dur   time.Duration // Spec.Duration: windows cut short (0: none)
	last  atomic.Pointer[Period]
}

// ParseCron parses a standard 5-field cron expression (or a descriptor such
// as @daily) to be read in loc. "TZ=" and "CRON_TZ=" prefixes and "@every"
// are refused: windows follow the family's time zone and wall clock. An
// expression that never fires is refused too.
func ParseCron(expr string, loc *time.Location) error {
	_, err := compileCron(expr, loc, 0)
	return err
}

func compileCron(expr string, loc *time.Location, dur time.Duration) (*cronSched, error) {
	if loc == nil {
		loc = time.UTC
	}
	e := strings.TrimSpace(expr)
	if strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ=") {
		return nil, fmt.Errorf("cron expression %q: no TZ= prefix; the family's timezone applies", expr)
	}
	if strings.HasPrefix(e, "@every") {
		return nil, fmt.Errorf("cron expression %q: @every is not a wall-clock schedule; use 5 fields", expr)
	}
	s, err := cron.ParseStandard(e)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %v", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron expression %q is not a wall-clock schedule", expr)
	}
	spec.Location = loc
	c := &cronSched{expr: expr, sched: spec, loc: loc, dur: dur}
	if c.sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, fmt.Errorf("cron expression %q never fires", expr)
	}
	return c, nil
}

func (c *cronSched) id(t time.Time) string { return t.In(c.loc).Format(cronIDLayout) }

// next returns the first fire strictly after t (zero: none within 5 years).
func (c *cronSched) next(t time.Time) time.Time {
	n := c.sched.Next(t)
	if !n.IsZero() && !n.After(t) { // defensive: always move forward
		n = c.sched.Next(t.Add(time.Minute))
	}
	return n
}

// cronLookback are the spans At searches backwards for the latest fire; the
// last exceeds the 5 years robfig/cron searches forwards.
var cronLookback = []time.Duration{
	time.Hour, 25 * time.Hour, 8 * 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 6 * 367 * 24 * time.Hour,
}

// repeatSpan bounds how far back a transition can turn the wall clock
// (DST moves it by at most 2 hours; one more for margin).
const repeatSpan = 4 * time.Hour

// prev returns the start of the window containing t, and false when no fire
// lies within the lookback. A window starts at a fire whose local minute is
// later than that of every fire before it: a fire that a transition repeats
// (the clock turned back) continues the window it falls in, so ids strictly
// increase.
func (c *cronSched) prev(t time.Time) (time.Time, bool) {
	for _, back := range cronLookback {
		f := c.next(t.Add(-back))
		if f.IsZero() || f.After(t) {
			continue
		}
		for {
			n := c.next(f)
			if n.IsZero() || n.After(t) {
				break
			}
			f = n
		}
		// f is the latest fire ≤ t; walk the fires of the span before it to
		// find the latest window start.
		g := c.next(f.Add(-repeatSpan - time.Second))
		if g.IsZero() || g.After(f) {
			return f, true
		}
		start, maxID := g, c.id(g)
		for !g.IsZero() && !g.After(f) {
			if id := c.id(g); id > maxID {
				start, maxID = g, id
			}
			g = c.next(g)
		}
		return start, true
	}
	return time.Time{}, false
}

// window returns the window starting at the fire start: it ends at the next
// fire with a later local minute.
func (c *cronSched) window(start time.Time) Period {
	id := c.id(start)
	end := c.fullEnd(start)
	if c.dur > 0 && (end.IsZero() || start.Add(c.dur).Before(end)) {
		end = start.Add(c.dur)
	}
	p := Period{ID: id, Start: start.In(c.loc)}
	if !end.IsZero() {
		p.End = end.In(c.loc)
	}
	return p
}

// fullEnd is where the window starting at the fire start would end without
// a Duration: the next fire with a later local minute (zero: none).
func (c *cronSched) fullEnd(start time.Time) time.Time {
	id := c.id(start)
	end := c.next(start)
	for !end.IsZero() && c.id(end) <= id {
		end = c.next(end)
	}
	return end
}

func (c *cronSched) at(t time.Time) Period {
	if p := c.last.Load(); p != nil && !t.Before(p.Start) && (p.End.IsZero() || t.Before(p.End)) {
		return *p
	}
	start, ok := c.prev(t)
	if !ok {
		// Before the first fire in reach: the first window to come.
		start = c.next(t)
		if start.IsZero() {
			return Period{ID: c.id(t), Start: t.In(c.loc)}
		}
	}
	p := c.window(start)
	if ok {
		c.last.Store(&p)
	}
	return p
}

// Compile returns s ready for the hot path: a Cron spec's expression parsed
// once (with a cache of the current window), Seasons sorted by start. Specs
// of other kinds are returned as they are. A Cron spec that is not compiled
// parses its expression on every call.
func (s Spec) Compile() (Spec, error) {
	switch s.Kind {
	case Cron:
		c, err := compileCron(s.Reset, s.loc(), s.Duration)
		if err != nil {
			return s, err
		}
		s.cron = c
	case Seasons:
		ss := append([]Season(nil), s.Seasons...)
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start.Before(ss[j].Start) })
		s.Seasons = ss
	}
	return s, nil
}

func (s Spec) cronSched() *cronSched {
	if s.cron != nil {
		return s.cron
	}
	c, err := compileCron(s.Reset, s.loc(), s.Duration)
	if err != nil {
		panic(fmt.Sprintf("period: cron spec %q: %v", s.Reset, err))
	}
	return c
}

// season returns the index of the season containing t, or of the last one
// starting before t, or 0.
func (s Spec) season(t time.Time) int {
	i := sort.Search(len(s.Seasons), func(i int) bool { return s.Seasons[i].Start.After(t) })
	return max(i-1, 0)
}

func (s Spec) seasonPeriod(i int) Period {
	loc := s.loc()
	ss := s.Seasons[i]
	return Period{ID: ss.ID, Start: ss.Start.In(loc), End: ss.End.In(loc)}
}

// Next returns the period after p, which must be a period of s. The All
// period is its own successor. For Seasons it is the next season, or the
// zero Period after the last one.
func (s Spec) Next(p Period) Period {
	switch s.Kind {
	case All:
		return s.At(time.Time{})
	case Seasons:
		return s.seasonBeside(p, +1)
	case Cron:
		if s.Duration > 0 {
			// p.End lies in the gap before the next window.
			if end := s.cronSched().fullEnd(p.Start); !end.IsZero() {
				return s.At(end)
			}
			return Period{}
		}
	}
	return s.At(p.End)
}

// Prev returns the period before p, which must be a period of s. The All
// period is its own predecessor. For Seasons it is the season before, or the
// zero Period before the first one.
func (s Spec) Prev(p Period) Period {
	switch s.Kind {
	case All:
		return s.At(time.Time{})
	case Seasons:
		return s.seasonBeside(p, -1)
	}
	return s.At(p.Start.Add(-time.Nanosecond))
}

// seasonBeside returns the season step places from season p (+1 the next,
// -1 the one before), or the zero Period past either end or when p is not a
// season of s.
func (s Spec) seasonBeside(p Period, step int) Period {
	for i := range s.Seasons {
		if s.Seasons[i].ID == p.ID {
			if j := i + step; j >= 0 && j < len(s.Seasons) {
				return s.seasonPeriod(j)
			}
			return Period{}
		}
	}
	return Period{}
}

// startOfHour returns the first instant whose local date and hour in loc are
// y-m-d h (normalized as time.Date does); see startOfDay, of which it is the
// hourly twin. A skipped hour maps to the first instant after it.
func startOfHour(y int, m time.Month, d, h int, loc *time.Location) time.Time {
	want := time.Date(y, m, d, h, 0, 0, 0, time.UTC)
	t := time.Date(y, m, d, h, 0, 0, 0, loc)
	for range 4 {
		switch got := localHour(t); {
		case got.Before(want):
			_, end := t.ZoneBounds()
			if end.IsZero() || !end.After(t) {
				return t
			}
			t = end
		case got.After(want):
			// The hour was skipped, or began inside a gap that ended
			// mid-hour: the first instant at or after it is where the zone
			// period of t began, if that is past the hour's start.
			if zs, _ := t.ZoneBounds(); !zs.IsZero() && zs.Before(t) && !localHour(zs).Before(want) {
				t = zs
				continue
			}
			return t
		default:
			if !localHour(t.Add(-time.Nanosecond)).Equal(got) {
				return t
			}
			// The hour is repeated and t is in a later occurrence (or a
			// transition fell inside it): go to its first instant.
			start, _ := t.ZoneBounds()
			if start.IsZero() {
				return t
			}
			before := start.Add(-time.Nanosecond)
			if !localHour(before).Equal(got) {
				return start
			}
			_, mi, sec := before.Clock()
			t = before.Add(-(time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second + time.Duration(before.Nanosecond())))
		}
	}
	return t
}

// localHour is t's local date and hour as a UTC instant, for comparisons.
func localHour(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
}

func appendHour(b []byte, y int, m time.Month, d, h int) []byte {
	b = appendDate(b, y, m, d)
	b = append(b, 'T')
	return appendInt(b, h, 2)
}

func (s Spec) hourAt(t time.Time) Period {
	loc := s.loc()
	lt := t.In(loc)
	y, m, d := lt.Date()
	h := lt.Hour()
	var buf [16]byte
	return Period{
		ID:    string(appendHour(buf[:0], y, m, d, h)),
		Start: startOfHour(y, m, d, h, loc),
		End:   startOfHour(y, m, d, h+1, loc),
	}
}

// parseHour parses YYYY-MM-DDTHH to an instant in that hour (or the instant
// after it when the hour does not exist: the caller's canonical check fails).
func (s Spec) parseHour(id string) (time.Time, error) {
	if len(id) != 13 || id[4] != '-' || id[7] != '-' || id[10] != 'T' {
		return time.Time{}, s.invalid(id, "want YYYY-MM-DDTHH")
	}
	y, ok1 := digits(id[0:4])
	m, ok2 := digits(id[5:7])
	d, ok3 := digits(id[8:10])
	h, ok4 := digits(id[11:13])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return time.Time{}, s.invalid(id, "want YYYY-MM-DDTHH")
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) || h > 23 {
		return time.Time{}, s.invalid(id, "no such hour")
	}
	return startOfHour(y, time.Month(m), d, h, s.loc()), nil
}

// parseCron parses YYYYMMDDTHHMM to the instant of that local minute.
func (s Spec) parseCron(id string) (time.Time, error) {
	if len(id) != 13 || id[8] != 'T' {
		return time.Time{}, s.invalid(id, "want YYYYMMDDTHHMM")
	}
	y, ok1 := digits(id[0:4])
	m, ok2 := digits(id[4:6])
	d, ok3 := digits(id[6:8])
	h, ok4 := digits(id[9:11])
	mi, ok5 := digits(id[11:13])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return time.Time{}, s.invalid(id, "want YYYYMMDDTHHMM")
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) || h > 23 || mi > 59 {
		return time.Time{}, s.invalid(id, "no such minute")
	}
	return time.Date(y, time.Month(m), d, h, mi, 0, 0, s.loc()), nil
}

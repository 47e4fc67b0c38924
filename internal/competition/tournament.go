// Package competition defines tournaments: families created at run time
// over the API. It validates a tournament request the way the
// config file's families are validated — every error names the request
// field — derives the tournament's family rules (one season from start to
// end, or the windows of a reset cron cut to a duration) and tells its
// state at an instant.
//
// It is pure: no Redis, no HTTP. It imports api/wire (the request's
// fields), config, period and rank only;
// internal/gateway keeps the registry (stored in Redis, polled by every
// gateway) and runs joins and gated writes through internal/store.
package competition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rankgate/rankgate/api/wire"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
)

// Registry answers: what storing a tournament's definition did (the Redis
// registry and the ledger's answer alike).
const (
	RegistryCreated   = "created"   // stored; the registry's version moved on
	RegistryExists    = "exists"    // the id is taken (ids are never reused)
	RegistryLimit     = "limit"     // max_active tournaments are active
	RegistryCancelled = "cancelled" // marked cancelled
	RegistryUnknown   = "unknown"   // no tournament by that id
)

// Tournament states.
const (
	StateUpcoming  = "upcoming"
	StateActive    = "active"
	StateEnded     = "ended"
	StateCancelled = "cancelled"
)

// Bounds of a tournament request.
const (
	MaxTitle       = 128
	MaxMetadata    = 2048
	MaxSize        = 10_000_000
	MaxAttempts    = 1_000_000
	MaxGrace       = 24 * time.Hour
	MaxDuration    = 366 * 24 * time.Hour
	MaxStepAfter   = 366 * 24 * time.Hour
	DefaultTop     = 100
	DefaultArchive = 24 * time.Hour
)

// Tournament is a tournament as created (POST /v1/tournaments) and stored.
// Pointers mark what a request may leave out; Normalize fills the defaults,
// so a stored tournament has every rule set.
type Tournament struct {
	// The request's fields (api/wire): Start and End bound a one-shot
	// tournament: one period [start, end). A recurring one (Reset and
	// Duration) opens a window at every fire of Reset, Duration long; Start
	// (default: its creation) and End (none: it recurs until cancelled)
	// bound the series.
	wire.Tournament
	// Set by the gateway, never by a request.
	Created   time.Time  `json:"created"`
	Cancelled *time.Time `json:"cancelled,omitempty"`
}

// Column is one sort column, as in config (families.<f>.columns).
type Column = wire.TournamentColumn

// Lifecycle is when a period settles and archives after its freeze (at end
// + grace, always automatic). Absent steps take the defaults: settle 1 m
// after the freeze with the top 100 (ledger mode), archive 24 h later.
type Lifecycle = wire.TournamentLifecycle

// Step is one lifecycle step: a Go duration after the step before, and
// (settle only) how many standings per board are saved.
type Step = wire.TournamentStep

// Recurring reports whether the tournament opens a period per reset.
func (t *Tournament) Recurring() bool { return t.Reset != "" }

// Normalize validates a request and fills its defaults (d: the config's
// tournaments.defaults; now: the creation time). Every error is a
// rank.Invalid naming the request field. It does not check the id against
// other families: the registry does.
func (t *Tournament) Normalize(d config.TournamentDefaults, now time.Time) error {
	if !rank.ValidFamily(t.ID) {
		return rank.Invalid("id", "id must match [a-z0-9_-]{1,32}")
	}
	if len(t.Title) > MaxTitle || !utf8.ValidString(t.Title) {
		return rank.Invalid("title", "title must be valid UTF-8 of at most %d bytes", MaxTitle)
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&t.Aggregate, config.AggregateSum)
	def(&t.Order, config.OrderDesc)
	def(&t.Tie, config.TieMember)
	def(&t.Rank, config.RankCompetition)
	def(&t.Timezone, "UTC")
	loc, err := time.LoadLocation(t.Timezone)
	if err != nil || strings.EqualFold(t.Timezone, "Local") {
		return rank.Invalid("timezone", "unknown time zone %q", t.Timezone)
	}
	if t.Recurring() {
		if t.Duration == "" {
			return rank.Invalid("duration", "a recurring tournament (reset) needs duration, the length of each window")
		}
		dur, err := time.ParseDuration(t.Duration)
		if err != nil || dur <= 0 || dur > MaxDuration {
			return rank.Invalid("duration", "duration must be a Go duration in (0, %s], such as 1h or 30m", MaxDuration)
		}
		if err := period.ParseCron(t.Reset, loc); err != nil {
			return rank.Invalid("reset", "%v", err)
		}
		if t.Start == nil {
			s := now.UTC().Truncate(time.Second)
			t.Start = &s
		}
		if t.End != nil && !t.End.After(*t.Start) {
			return rank.Invalid("end", "end must be after start")
		}
	} else {
		if t.Duration != "" {
			return rank.Invalid("duration", "duration is used with reset (a recurring tournament); a one-shot tournament takes start and end")
		}
		if t.Start == nil {
			return rank.Invalid("start", "start is required (or reset and duration for a recurring tournament)")
		}
		if t.End == nil {
			return rank.Invalid("end", "end is required (or reset and duration for a recurring tournament)")
		}
		if !t.End.After(*t.Start) {
			return rank.Invalid("end", "end must be after start")
		}
	}
	if t.End != nil && !t.End.After(now) {
		return rank.Invalid("end", "end lies in the past: the tournament could never run")
	}
	if t.MaxSize != nil && (*t.MaxSize < 1 || *t.MaxSize > MaxSize) {
		return rank.Invalid("max_size", "max_size must be 1..%d (leave it out for no bound)", MaxSize)
	}
	if t.MaxAttempts != nil && (*t.MaxAttempts < 1 || *t.MaxAttempts > MaxAttempts) {
		return rank.Invalid("max_attempts", "max_attempts must be 1..%d (leave it out for no bound)", MaxAttempts)
	}
	if t.Shards == nil {
		n := d.Shards
		t.Shards = &n
	}
	if t.Grace == "" {
		t.Grace = d.Grace.String()
	}
	if g, err := time.ParseDuration(t.Grace); err != nil || g < 0 || g > MaxGrace {
		return rank.Invalid("grace", "grace must be a Go duration in 0s..%s", MaxGrace)
	}
	if err := t.normalizeLifecycle(); err != nil {
		return err
	}
	if len(t.Metadata) > 0 {
		if len(t.Metadata) > MaxMetadata {
			return rank.Invalid("metadata", "metadata must be at most %d bytes", MaxMetadata)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(t.Metadata, &obj); err != nil || obj == nil {
			return rank.Invalid("metadata", "metadata must be a JSON object")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, t.Metadata); err == nil {
			t.Metadata = buf.Bytes()
		}
	}
	for i := range t.Columns {
		if t.Columns[i].Order == "" {
			t.Columns[i].Order = config.OrderDesc
		}
	}
	if t.Created.IsZero() {
		t.Created = now.UTC()
	}
	// The family rules, checked like a configured family's.
	_, err = t.Family(d)
	return err
}

func (t *Tournament) normalizeLifecycle() error {
	if t.Lifecycle == nil {
		t.Lifecycle = &Lifecycle{}
	}
	lc := t.Lifecycle
	if lc.Settle == nil {
		lc.Settle = &Step{After: time.Minute.String(), Top: DefaultTop}
	}
	if lc.Settle.After == "" {
		lc.Settle.After = time.Minute.String()
	}
	if lc.Settle.Top == 0 {
		lc.Settle.Top = DefaultTop
	}
	if lc.Archive == nil {
		lc.Archive = &Step{After: DefaultArchive.String()}
	}
	if lc.Archive.After == "" {
		lc.Archive.After = DefaultArchive.String()
	}
	if lc.Archive.Top != 0 {
		return rank.Invalid("lifecycle.archive.top", "top is a setting of settle only")
	}
	for key, after := range map[string]string{"lifecycle.settle.after": lc.Settle.After, "lifecycle.archive.after": lc.Archive.After} {
		if d, err := time.ParseDuration(after); err != nil || d < 0 || d > MaxStepAfter {
			return rank.Invalid(key, "must be a Go duration in 0s..%s", MaxStepAfter)
		}
	}
	return nil
}

// SeasonID names the one period of a one-shot tournament: its start, in
// UTC, to the minute (the form of a cron window's id).
func (t *Tournament) SeasonID() string { return t.Start.UTC().Format("20060102T1504") }

// Family derives the tournament's family rules from a normalized
// tournament and checks them as config checks a family. The error names the
// request field.
func (t *Tournament) Family(d config.TournamentDefaults) (*config.Family, error) {
	loc, err := time.LoadLocation(t.Timezone)
	if err != nil {
		return nil, rank.Invalid("timezone", "unknown time zone %q", t.Timezone)
	}
	grace, _ := time.ParseDuration(t.Grace)
	f := &config.Family{
		Name: t.ID, KeyGroup: t.ID, Source: config.SourceEvents, Aggregate: t.Aggregate, Order: t.Order,
		Location: loc, WeekStart: time.Monday, Grace: grace, Retention: d.Retention, CacheTTL: d.CacheTTL,
		Tie: t.Tie, Rank: t.Rank, RulesVersion: "1",
		Index: config.FamilyIndex{MaxLag: 250 * time.Millisecond}, Live: config.FamilyLive{Interval: time.Second},
		Dimensions: map[string]config.Dimension{config.DimNational: {Shards: *t.Shards}},
	}
	switch {
	case t.MaxPoints != nil:
		f.MaxPoints = *t.MaxPoints
	case t.Tie == config.TieFirst:
		f.MaxPoints = config.DefaultTieFirstMaxPoints
	default:
		f.MaxPoints = config.MaxPointsLimit
	}
	if t.Tie == config.TieFirst {
		f.SeqCapacity = config.DefaultSeqCapacity
	}
	if t.Recurring() {
		f.Period, f.Reset = config.PeriodCron, t.Reset
		f.Duration, _ = time.ParseDuration(t.Duration)
	} else {
		f.Period = config.PeriodSeasons
		f.Seasons = []period.Season{{ID: t.SeasonID(), Start: *t.Start, End: *t.End}}
	}
	for _, c := range t.Columns {
		f.Columns = append(f.Columns, config.Column{Name: c.Name, Order: c.Order, Max: c.Max, Aggregate: c.Aggregate})
	}
	lc := &config.Lifecycle{Freeze: config.FreezeAuto}
	if t.Lifecycle != nil {
		if s := t.Lifecycle.Settle; s != nil {
			after, _ := time.ParseDuration(s.After)
			lc.Settle = &config.LifecycleStep{After: after, Top: s.Top}
		}
		if a := t.Lifecycle.Archive; a != nil {
			after, _ := time.ParseDuration(a.After)
			lc.Archive = &config.LifecycleStep{After: after}
		}
	}
	f.Lifecycle = lc
	if errs := config.CheckFamily(t.ID, f); len(errs) > 0 {
		fe := errs[0]
		return nil, rank.Invalid(requestField(fe.Key), "%s", fe.Msg)
	}
	return f, nil
}

// requestField names the request field behind a family key.
func requestField(key string) string {
	switch {
	case key == "" || key == "name":
		return "id"
	case key == "seq_capacity":
		return "max_points"
	case strings.HasPrefix(key, "dimensions"):
		return "shards"
	case strings.HasPrefix(key, "seasons"):
		return "end"
	case key == "cache_ttl", key == "retention":
		return "id" // from tournaments.defaults; valid once the config is
	}
	return key
}

// State is the tournament's state at now.
func (t *Tournament) State(now time.Time) string {
	switch {
	case t.Cancelled != nil:
		return StateCancelled
	case t.Start != nil && now.Before(*t.Start):
		return StateUpcoming
	case t.End != nil && !now.Before(*t.End):
		return StateEnded
	}
	return StateActive
}

// ActiveUntil is when the tournament stops counting against
// tournaments.max_active: its end, or never (a recurring one without end).
func (t *Tournament) ActiveUntil() (time.Time, bool) {
	if t.End == nil {
		return time.Time{}, false
	}
	return *t.End, true
}

// ErrNotTournament: a stored definition that does not parse.
var ErrNotTournament = errors.New("not a tournament definition")

// Parse reads a stored tournament.
func Parse(data []byte) (*Tournament, error) {
	var t Tournament
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotTournament, err)
	}
	if !rank.ValidFamily(t.ID) || t.Shards == nil {
		return nil, fmt.Errorf("%w: id %q", ErrNotTournament, t.ID)
	}
	return &t, nil
}

// Package config loads, defaults and validates rankgate's YAML configuration
// (every key: docs/config.md; an example setting each: rankgate.example.yaml).
//
// Decoding is strict: an unknown key anywhere, a duplicate key, or a value of
// the wrong type is an error naming the full dotted key path
// (families.learning.dimensions.national.shardz: unknown key). Every
// validation error names its key too; all errors are reported at once, joined
// with errors.Join, each a *FieldError.
//
// Defaults are the values of the example file. Family keys the example sets
// on every family have these defaults: source events, aggregate sum (events
// families only), order desc, period week, timezone UTC, week_start monday,
// grace 5m, retention 1080h, cache_ttl 1s, tie member, rank competition,
// rules_version "1", max_points 2^53−1 (tie member) or 8388607 with
// seq_capacity 2^30 (tie first). A dimension's shards default to 1.
//
// It imports internal/period and internal/rank only; it must not import
// go-redis, net/http, internal/store or internal/gateway.
package config

import (
	"errors"

	"fmt"
	"github.com/rankgate/rankgate/internal/period"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	// Period boundaries depend on time zones: embed the database so the
	// gateway does not depend on the host's /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/rankgate/rankgate/internal/rank"
)

// Enum values.
const (
	SourceEvents     = "events"
	SourceProjection = "projection"
	SourceDerived    = "derived"

	AggregateSum = "sum"
	AggregateMax = "max"
	AggregateMin = "min"

	OrderDesc = "desc"
	OrderAsc  = "asc"

	PeriodDay     = "day"
	PeriodWeek    = "week"
	PeriodMonth   = "month"
	PeriodAll     = "all"
	PeriodHour    = "hour"
	PeriodSeasons = "seasons"
	PeriodCron    = "cron"

	TieMember = "member"
	TieFirst  = "first"

	RankOrdinal     = "ordinal"
	RankCompetition = "competition"

	ScopeRead  = "read"
	ScopeWrite = "write"
	ScopeAdmin = "admin"
	// ScopeAwards: an award consumer (lists the outbox, acknowledges).
	ScopeAwards = "awards"

	// DimNational is the dimension every family has; it takes no value.
	DimNational = "national"
)

// Score bounds.
const (
	// ScoreLimit is rank.MaxSafe (2^53): every stored score must stay within
	// ±ScoreLimit, where float64 (the Redis score type) is still exact.
	ScoreLimit = rank.MaxSafe
	// MaxPointsLimit is the largest max_points (2^53 − 1).
	MaxPointsLimit int64 = ScoreLimit - 1
	// DefaultTieFirstMaxPoints and DefaultSeqCapacity are the tie "first"
	// defaults: (8388607 + 1) × 2^30 = 2^53.
	DefaultTieFirstMaxPoints int64 = 1<<23 - 1
	DefaultSeqCapacity       int64 = 1 << 30
)

// Environment variables read by ApplyEnv.
const (
	EnvListen      = "RANKGATE_LISTEN"
	EnvRedisAddrs  = "RANKGATE_REDIS_ADDRS" // comma-separated
	EnvRedisPrefix = "RANKGATE_REDIS_PREFIX"
)

// Config is the whole configuration.
type Config struct {
	Listen string
	Redis  Redis
	Ledger Ledger
	Auth   Auth
	Limits Limits
	Server Server
	Awards Awards
	// Tracing switches OpenTelemetry traces on (internal/telemetry).
	Tracing Tracing
	// Index bounds each gateway's in-memory read index of hot boards
	// (families with index.enabled).
	Index Index
	// Live bounds the server-sent event streams of GET {board}/live.
	Live Live
	// Tournaments: competitions created at run time (POST /v1/tournaments).
	Tournaments Tournaments
	// Audit configures the audit log of administrative changes.
	Audit Audit
	// Families by name; FamilyNames lists the names sorted.
	Families    map[string]*Family
	FamilyNames []string
}

// Tournaments configures the families created at run time over the API.
type Tournaments struct {
	Enabled bool
	// MaxActive bounds the tournaments not yet ended and not cancelled
	// (upcoming ones count).
	MaxActive int
	// Defaults apply to a tournament that does not set them.
	Defaults TournamentDefaults
}

// Audit configures the audit log (GET /v1/audit).
type Audit struct {
	// MaxEntries caps the Redis stream that holds the log in Redis-only
	// mode (XADD MAXLEN ~): the oldest entries leave first. The ledger's
	// table (ledger mode) is not capped.
	MaxEntries int64
	// HMACSecretEnv names the env var holding the key of the keyed hash
	// that names an erased member in the log (at least 32 bytes); empty:
	// none, and an erasure cannot be recorded.
	HMACSecretEnv string
}

// HMACSecret returns the secret from the env var HMACSecretEnv names (nil
// getenv: os.Getenv), surrounding blanks trimmed.
func (a Audit) HMACSecret(getenv func(string) string) string {
	return strings.TrimSpace(lookup(a.HMACSecretEnv, getenv))
}

// TournamentDefaults are a tournament's rules where its request is silent.
type TournamentDefaults struct {
	Shards    int
	CacheTTL  time.Duration
	Grace     time.Duration
	Retention time.Duration // key TTL after archive
}

// Redis holds the connection settings.
type Redis struct {
	Addrs       []string // cluster seeds, or one standalone node
	Prefix      string   // key prefix, [a-z0-9_]{1,16}
	Username    string   // ACL user, empty: default
	PasswordEnv string   // name of the env var holding the password; empty: none
	TLS         bool
	// TLS settings, only with TLS (see TLSConfig). TLSCAFile is a PEM bundle
	// of the CAs that sign the nodes' certificates (empty: the system roots);
	// TLSCertFile and TLSKeyFile, set together, are the client certificate
	// for mutual TLS; TLSServerName is the name the nodes' certificates are
	// checked against (empty: each node's host from its address);
	// TLSInsecureSkipVerify turns certificate checks off (tests only).
	TLSCAFile             string
	TLSCertFile           string
	TLSKeyFile            string
	TLSServerName         string
	TLSInsecureSkipVerify bool
	DialTimeout           time.Duration
	ReadTimeout           time.Duration
	WriteTimeout          time.Duration
	ReplicaReads          bool // allow consistency=replica
	WaitReplicas          int  // WAIT n after writes; 0: off
	// ClusterReloadInterval is how often the cluster slot map is reloaded
	// (go-redis ClusterStateReloadInterval; its 60 s default is far too slow
	// after a failover). 100ms..2s.
	ClusterReloadInterval time.Duration
	PoolSize              int // 0: go-redis default
	// ReadTransport is how a read whose keys one master serves reaches it:
	// ReadTransportRueidis (one auto-pipelining rueidis client per master)
	// or ReadTransportGoRedis (a pipeline on go-redis's client of the master).
	ReadTransport string
}

// Read transports (redis.read_transport).
const (
	ReadTransportRueidis = "rueidis"
	ReadTransportGoRedis = "go-redis"
)

// Ledger holds the PostgreSQL ledger settings.
type Ledger struct {
	DSNEnv string // env var with the DSN; empty: Redis-only mode
	// CommitLinger is how long a ledger commit waits for more events to
	// share its transaction and flush (group commit); 0: no wait (events
	// still share a commit when they queue behind a running one). 0..100ms.
	CommitLinger time.Duration
	// CommitMaxEvents bounds the events of one ledger commit. 1..10000.
	CommitMaxEvents int
}

// Awards configures where settlements deliver awards and period notices.
type Awards struct {
	Webhook Webhook
}

// Webhook is the receiver of award and notice POSTs. An empty URLEnv means
// pull only (GET /v1/awards, POST /v1/awards/{key}/ack).
type Webhook struct {
	URLEnv      string // env var holding the receiver URL
	SecretEnv   string // env var holding the HMAC-SHA256 secret
	Timeout     time.Duration
	MaxAttempts int
}

// URL returns the receiver URL from the env var URLEnv names.
func (w Webhook) URL(getenv func(string) string) string {
	return strings.TrimSpace(lookup(w.URLEnv, getenv))
}

// Secret returns the signing secret from the env var SecretEnv names.
func (w Webhook) Secret(getenv func(string) string) string { return lookup(w.SecretEnv, getenv) }

// Tracing holds the trace settings; everything else about traces comes
// from the standard OTEL_* environment variables.
type Tracing struct {
	// Enabled exports traces over OTLP/HTTP. Off by default; an
	// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT in the environment turns it on
	// too, OTEL_SDK_DISABLED=true turns it off.
	Enabled bool
}

// Auth holds the bearer tokens.
type Auth struct {
	Tokens []Token
	// Tickets are the single-use stand-ins for a token that a browser's
	// EventSource, which cannot send headers, passes as ?ticket=.
	Tickets Tickets
	// JWT accepts player tokens minted by the game's backend; nil: none.
	JWT *JWT
}

// JWT configures player tokens (auth.jwt).
type JWT struct {
	Issuer   string // checked when set
	Audience string // checked when set
	// MemberClaim names the claim that holds the member (default sub).
	MemberClaim string
	// ClockSkew is the leeway of exp, nbf and iat.
	ClockSkew time.Duration
	// Keys are the verification keys, several at once for rotation; a
	// token's kid picks one.
	Keys []JWTKey
	// ReloadInterval is how often the public key files are checked for a
	// change (they are also re-read on SIGHUP); 0: only on SIGHUP.
	ReloadInterval time.Duration
}

// JWTKey is one verification key: an HS256 secret from an env var, or an
// ES256, RS256 or EdDSA public key from a PEM file.
type JWTKey struct {
	Kid           string
	Alg           string
	SecretEnv     string
	PublicKeyFile string
}

// JWT algorithms.
const (
	AlgHS256 = "HS256"
	AlgES256 = "ES256"
	AlgRS256 = "RS256"
	AlgEdDSA = "EdDSA"
)

// Secret returns the HS256 secret from the env var SecretEnv names. A nil
// getenv means os.Getenv.
func (k JWTKey) Secret(getenv func(string) string) string {
	return strings.TrimSpace(lookup(k.SecretEnv, getenv))
}

// Tickets configures POST /v1/tickets.
type Tickets struct {
	// TTL: a ticket not used within it is refused.
	TTL time.Duration
}

// Token is one bearer token, read from an env var, and its scopes.
type Token struct {
	TokenEnv string
	Scopes   []string // non-empty subset of read, write, admin
	// RatePerSecond, when > 0, limits the token's requests (a token bucket
	// refilled at this rate holding Burst); 0: unlimited.
	RatePerSecond float64
	// Burst is the bucket size; it defaults to ⌈RatePerSecond⌉ (at least 1)
	// and is only used with RatePerSecond.
	Burst int
}

// Index is the gateway-wide setting of the read index (docs/architecture.md, "The read index"): every
// gateway keeps hot boards of families with index.enabled in memory, fed by
// the per-shard change feeds that the write scripts append to.
type Index struct {
	// MaxBoards bounds the boards held at once; the longest idle leaves
	// first when another must enter.
	MaxBoards int
	// MaxMembers bounds the members of all held boards together; a board
	// that does not fit stays on fan-out reads (and metrics say so).
	MaxMembers int64
	// FeedLen is how many change-feed entries each board shard keeps (XADD
	// MAXLEN ~): a follower that falls further behind reloads the shard.
	FeedLen int64
	// IdleAfter: a board not read for this long leaves the index.
	IdleAfter time.Duration
	// PollInterval is how often a shard whose feed moved is read again;
	// PollIdle the longest wait between two reads of a quiet shard (the
	// wait doubles from PollInterval up to it). A quiet board of S shards
	// costs S / PollIdle Redis commands per second.
	PollInterval time.Duration
	PollIdle     time.Duration
}

// Live is the gateway-wide setting of live boards (docs/architecture.md, "Live boards: the hub"): streams
// of a board's answer, computed once per board and query shape per
// interval and shared by every subscriber.
type Live struct {
	// MaxSubscribers bounds the open streams of one gateway; past it a new
	// stream is refused with 503 and Retry-After.
	MaxSubscribers int
	// MaxPerToken bounds the open streams of one static token or JWT
	// subject.
	MaxPerToken int
	// Heartbeat is how often an idle stream gets a ": ping" comment.
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a stream; a client that does not
	// take an event within it is dropped.
	WriteTimeout time.Duration
	// MaxBehind: a subscriber whose newest answer has waited this long
	// for a reader that is still busy with an older one gets "overloaded"
	// and is closed.
	MaxBehind time.Duration
}

// FamilyLive is a family's setting of live boards.
type FamilyLive struct {
	// Interval: each board and query shape is computed at most once per
	// interval, and a subscriber gets at most one update per interval.
	Interval time.Duration
}

// DimCohort is the dimension type of a league's cohort boards
// (cohort:<tier>-<n>); Validate adds it, one shard, to a family with cohorts.
const DimCohort = "cohort"

// Cohorts is a league: cohorts of Size members per tier; at the period's end
// the top Promote of each cohort move up one tier, the bottom Demote down.
type Cohorts struct {
	Size    int
	Tiers   []string // lowest first; a new member starts in Tiers[0]
	Promote int
	Demote  int
}

// TierIndex returns the position of a tier in Tiers, or -1.
func (c *Cohorts) TierIndex(tier string) int {
	for i, t := range c.Tiers {
		if t == tier {
			return i
		}
	}
	return -1
}

// ClientWrites bounds the events of player tokens (write:self) in a family.
type ClientWrites struct {
	// MaxDelta bounds |delta| (|value| in a max/min family) of one event.
	MaxDelta int64
	// MaxEventsPerMinute bounds one member's events in any 60 s, counted in
	// Redis so that it holds across every gateway.
	MaxEventsPerMinute int
}

// FamilyIndex is a family's use of the read index.
type FamilyIndex struct {
	// Enabled: the write scripts append every change of the family's board
	// shards to their change feeds, and reads use the gateway's index.
	Enabled bool
	// MaxLag: reads that name no consistency answer from the index while
	// it lags Redis by at most this; otherwise from today's read path.
	MaxLag time.Duration
}

// Limits are the request bounds.
type Limits struct {
	MaxTop    int
	MaxOffset int
	MaxRadius int
	MaxBatch  int
	MaxLookup int
}

// Server holds the HTTP server's timeouts and load bounds.
type Server struct {
	ReadHeaderTimeout time.Duration // http.Server.ReadHeaderTimeout
	ReadTimeout       time.Duration // http.Server.ReadTimeout (headers and body)
	WriteTimeout      time.Duration // http.Server.WriteTimeout
	IdleTimeout       time.Duration // http.Server.IdleTimeout (keep-alive)
	// RequestTimeout is the context deadline of every /v1 request; a request
	// that runs out of it answers 503 unavailable.
	RequestTimeout time.Duration
	// MaxInflight bounds the /v1 requests served at once; one more answers
	// 503 unavailable with Retry-After at once instead of queueing.
	MaxInflight int
	// GCMinHeapMiB is the GC floor: the Go GC's target is kept at this many
	// MiB of heap or more while the live heap is small (0: off, GOGC
	// alone). Unused when the environment sets GOGC.
	GCMinHeapMiB int
	// CORS lets browsers on other origins call the /v1 routes.
	CORS CORS
}

// CORS lists the browser origins allowed to call the API.
type CORS struct {
	// AllowedOrigins are exact origins (scheme://host[:port]); empty: no
	// CORS headers at all.
	AllowedOrigins []string
	// MaxAge is how long a browser may cache a preflight's answer
	// (Access-Control-Max-Age).
	MaxAge time.Duration
}

// Family is one kind of board with one rule set.
type Family struct {
	Name   string
	Source string // events | projection | derived
	// KeyGroup is the name the family's hash tags carry (default: the
	// family's own). Families combined in-slot — a derived family and its
	// inputs — share one.
	KeyGroup string
	// DerivedFrom defines a derived family (source: derived): its boards are
	// computed shard by shard from its inputs' boards with ZUNIONSTORE.
	DerivedFrom *Derivation
	Aggregate   string // sum | max | min for events families; empty for projection families
	Order       string // desc | asc
	Period      string // hour | day | week | month | all | seasons | cron
	// Seasons are the explicit windows of period: seasons, in order, not
	// overlapping; Reset is the 5-field cron expression of period: cron.
	Seasons []period.Season
	Reset   string
	// Duration cuts each cron window short to [fire, fire + Duration)
	// (recurring tournaments; not a key of the config file). 0: none.
	Duration  time.Duration
	Location  *time.Location
	WeekStart time.Weekday
	Grace     time.Duration // late-event window after the period ends
	Retention time.Duration // key TTL after archive
	CacheTTL  time.Duration // 0: no cache
	// CacheShared keeps cached answers in Redis too, shared by every
	// gateway: one recompute per TTL per query across them (needs CacheTTL).
	CacheShared bool
	Tie         string // member | first
	Rank        string // ordinal | competition
	MaxPoints   int64  // |points| bound
	// SeqCapacity is B, the achievements per period under tie "first";
	// 0 under tie "member".
	SeqCapacity int64
	// Columns are the sort columns after points (at most rank.MaxColumns):
	// members equal on points are ordered by them, then by the tie rule.
	Columns      []Column
	RulesVersion string
	// Lifecycle runs freeze, settle and archive on schedule; nil: by hand.
	Lifecycle *Lifecycle
	// Index: the family's boards are kept in each gateway's read index.
	Index FamilyIndex
	// Live: how often live streams of the family's boards are refreshed.
	Live FamilyLive
	// ClientWrites lets player tokens with write:self send events for their
	// own member; nil: no player writes.
	ClientWrites *ClientWrites
	// Cohorts makes the family a league: each member's first event of a
	// period places them in a cohort of their tier, a board of its own
	// (dimension DimCohort); nil: no cohorts.
	Cohorts *Cohorts
	// Dimensions by type; "national" is always present.
	Dimensions map[string]Dimension
	// DimensionTypes lists the non-national dimension types, sorted.
	DimensionTypes []string
}

// Column is one sort column of a family.
type Column struct {
	Name  string // [a-z0-9_]{1,32}, unique in the family
	Order string // asc | desc
	Max   int64  // values lie in [0, Max], 1..2^53−1
	// Aggregate (sum families only): sum | last | max | min (default sum);
	// max/min families and projections keep the whole tuple.
	Aggregate string
}

// Column aggregates of sum families.
const (
	ColumnSum  = "sum"
	ColumnLast = "last"
	ColumnMax  = "max"
	ColumnMin  = "min"
)

// Lifecycle is a family's automatic period steps. Times follow the period's
// bounds: the freeze at end + grace, the settlement Settle.After later, the
// archive Archive.After after the settlement (after the freeze when nothing
// settles: Redis-only mode, or no Settle).
type Lifecycle struct {
	// Freeze is "auto" (the scheduler freezes at end + grace) or "manual"
	// (an operator freezes; settle and archive still follow on schedule).
	Freeze  string
	Settle  *LifecycleStep // nil: settle by hand
	Archive *LifecycleStep // nil: archive by hand
}

// LifecycleStep is one scheduled step after the previous one.
type LifecycleStep struct {
	After time.Duration
	Top   int // settle only: standings saved per board
}

// Lifecycle freeze modes.
const (
	FreezeAuto   = "auto"
	FreezeManual = "manual"
)

// Lifecycle defaults.
const (
	DefaultSettleAfter  = 10 * time.Minute
	DefaultSettleTop    = 100
	DefaultArchiveAfter = 24 * time.Hour
)

// Dimension is one business cut of a family.
type Dimension struct {
	Shards int
}

// FieldError is one configuration error, naming its dotted key path.
type FieldError struct {
	Key string // e.g. families.learning.dimensions.national.shards
	Msg string
}

func (e *FieldError) Error() string {
	if e.Key == "" {
		return "(root): " + e.Msg
	}
	return e.Key + ": " + e.Msg
}

// Default returns the configuration with every default set and no families.
func Default() *Config {
	return &Config{
		Listen: "127.0.0.1:8080",
		Redis: Redis{
			Addrs:                 []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"},
			Prefix:                "rk",
			DialTimeout:           2 * time.Second,
			ReadTimeout:           500 * time.Millisecond,
			WriteTimeout:          500 * time.Millisecond,
			ReplicaReads:          true,
			ClusterReloadInterval: time.Second,
			ReadTransport:         ReadTransportRueidis,
		},
		Ledger: Ledger{CommitLinger: 2 * time.Millisecond, CommitMaxEvents: 500},
		Limits: Limits{
			MaxTop:    1000,
			MaxOffset: 10000,
			MaxRadius: 100,
			MaxBatch:  1000,
			MaxLookup: 1000,
		},
		Server: Server{
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       15 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       120 * time.Second,
			RequestTimeout:    10 * time.Second,
			MaxInflight:       1000,
			GCMinHeapMiB:      64,
			CORS:              CORS{MaxAge: 10 * time.Minute},
		},
		Auth:   Auth{Tickets: Tickets{TTL: time.Minute}},
		Awards: Awards{Webhook: Webhook{Timeout: 5 * time.Second, MaxAttempts: 12}},
		Index: Index{MaxBoards: 64, MaxMembers: 5_000_000, FeedLen: 100_000, IdleAfter: 10 * time.Minute,
			PollInterval: 5 * time.Millisecond, PollIdle: 200 * time.Millisecond},
		Live: Live{MaxSubscribers: 20_000, MaxPerToken: 100, Heartbeat: 15 * time.Second,
			WriteTimeout: 10 * time.Second, MaxBehind: 30 * time.Second},
		Tournaments: Tournaments{Enabled: true, MaxActive: 1000,
			Defaults: TournamentDefaults{Shards: 1, CacheTTL: time.Second, Grace: 10 * time.Second, Retention: 1080 * time.Hour}},
		Audit:    Audit{MaxEntries: 100_000},
		Families: map[string]*Family{},
	}
}

// defaultFamily returns a family with the defaults that do not depend on
// other keys (aggregate, max_points and seq_capacity are filled after
// decoding, once source and tie are known).
func defaultFamily(name string) *Family {
	return &Family{
		Name:         name,
		Source:       SourceEvents,
		Order:        OrderDesc,
		Period:       PeriodWeek,
		Location:     time.UTC,
		WeekStart:    time.Monday,
		Grace:        5 * time.Minute,
		Retention:    1080 * time.Hour,
		CacheTTL:     time.Second,
		Index:        FamilyIndex{MaxLag: 250 * time.Millisecond},
		Live:         FamilyLive{Interval: time.Second},
		Tie:          TieMember,
		Rank:         RankCompetition,
		RulesVersion: "1",
	}
}

// Load reads and parses the file at path (see Parse).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes one YAML document strictly, fills defaults and validates.
// The error joins every problem found, each a *FieldError naming its key.
func Parse(data []byte) (*Config, error) {
	c, err := decode(data)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ApplyEnv overrides settings from the environment: RANKGATE_LISTEN,
// RANKGATE_REDIS_ADDRS (comma list) and RANKGATE_REDIS_PREFIX. Unset or
// blank variables change nothing. A nil getenv means os.Getenv. Call
// Validate afterwards.
func (c *Config) ApplyEnv(getenv func(string) string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := strings.TrimSpace(getenv(EnvListen)); v != "" {
		c.Listen = v
	}
	if v := strings.TrimSpace(getenv(EnvRedisAddrs)); v != "" {
		var addrs []string
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		c.Redis.Addrs = addrs
	}
	if v := strings.TrimSpace(getenv(EnvRedisPrefix)); v != "" {
		c.Redis.Prefix = v
	}
}

// ListenIsLoopback reports whether Listen binds a loopback address only
// (127.0.0.0/8, ::1 or localhost). An empty host (":8080") binds every
// interface and is not loopback.
func (c *Config) ListenIsLoopback() bool {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Family returns the named family.
func (c *Config) Family(name string) (*Family, bool) {
	f, ok := c.Families[name]
	return f, ok && f != nil
}

// Password returns the Redis password from the env var PasswordEnv names
// ("" when none is configured). A nil getenv means os.Getenv.
func (r Redis) Password(getenv func(string) string) string {
	return lookup(r.PasswordEnv, getenv)
}

// DSN returns the ledger DSN from the env var DSNEnv names ("" when none is
// configured: Redis-only mode). A nil getenv means os.Getenv.
func (l Ledger) DSN(getenv func(string) string) string {
	return lookup(l.DSNEnv, getenv)
}

// Value returns the token from the env var TokenEnv names. A nil getenv
// means os.Getenv.
func (t Token) Value(getenv func(string) string) string {
	return lookup(t.TokenEnv, getenv)
}

// Secrets reads every token's value from the env var its TokenEnv names
// (surrounding white space trimmed), in the order of Tokens. A nil getenv
// means os.Getenv. An unset or empty variable, a value that is not an RFC
// 6750 bearer token ([A-Za-z0-9-._~+/]+=*), or two tokens with the same
// value is an error naming the key (auth.tokens[1].token_env), joined like
// Validate's; the message never contains a value.
func (a Auth) Secrets(getenv func(string) string) ([]string, error) {
	v := &validator{}
	out := make([]string, len(a.Tokens))
	for i, t := range a.Tokens {
		key := fmt.Sprintf("auth.tokens[%d].token_env", i)
		val := strings.TrimSpace(t.Value(getenv))
		switch {
		case val == "":
			v.errorf(key, "environment variable %s is empty or unset; it must hold the token", t.TokenEnv)
			continue
		case !bearerTokenRe.MatchString(val):
			v.errorf(key, "the value of %s is not a bearer token (want [A-Za-z0-9-._~+/]+ with optional trailing =)", t.TokenEnv)
			continue
		}
		if j := slices.Index(out[:i], val); j >= 0 {
			v.errorf(key, "%s holds the same token as auth.tokens[%d] (%s); every token must be distinct", t.TokenEnv, j, a.Tokens[j].TokenEnv)
			continue
		}
		out[i] = val
	}
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Allows reports whether the token carries scope.
func (t Token) Allows(scope string) bool { return slices.Contains(t.Scopes, scope) }

func lookup(name string, getenv func(string) string) string {
	if name == "" {
		return ""
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	return getenv(name)
}

// Desc reports whether higher points rank first (order desc).
func (f *Family) Desc() bool { return f.Order == OrderDesc }

// TieFirst reports whether equal points are ordered by who reached them first.
func (f *Family) TieFirst() bool { return f.Tie == TieFirst }

// Competition reports whether ranks are competition ranks (1, 2, 2, 4).
func (f *Family) Competition() bool { return f.Rank == RankCompetition }

// Projection reports whether the family takes projections instead of events.
func (f *Family) Projection() bool { return f.Source == SourceProjection }

// Derived reports whether the family's boards are computed from others.
func (f *Family) Derived() bool { return f.Source == SourceDerived }

// Derivation is final = Σ weight × input (or the min/max of the weighted
// inputs), per member, per board shard.
type Derivation struct {
	Inputs    []DerivedInput
	Aggregate string // sum (default) | min | max
}

// DerivedInput is one input family and its integer weight.
type DerivedInput struct {
	Family string
	Weight int64
}

// Shards returns the shard count of a dimension type ("national", "province",
// ...) and whether the family declares it.
func (f *Family) Shards(dimType string) (int, bool) {
	d, ok := f.Dimensions[dimType]
	return d.Shards, ok
}

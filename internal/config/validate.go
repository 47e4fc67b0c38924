package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
)

var (
	familyNameRe = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
	dimTypeRe    = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	prefixRe     = regexp.MustCompile(`^[a-z0-9_]{1,16}$`)
	envNameRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	rulesRe      = regexp.MustCompile(`^[\x21-\x7e]{1,64}$`)
	// bearerTokenRe is RFC 6750's b64token.
	bearerTokenRe = regexp.MustCompile(`^[A-Za-z0-9\-._~+/]+=*$`)
)

// Bounds checked by Validate.
const (
	maxTimeout       = time.Minute
	minClusterReload = 100 * time.Millisecond
	maxClusterReload = 2 * time.Second
	maxWaitReplicas  = 5
	maxPoolSize      = 10000
	maxCommitLinger  = 100 * time.Millisecond
	maxCommitEvents  = 10000
	maxShards        = 1024
	maxTopCap        = 10000
	maxOffsetCap     = 1_000_000
	maxRadiusCap     = 1000
	maxBatchCap      = 10000
	maxLookupCap     = 10000
	maxRate          = 1e6
	maxBurst         = 1_000_000
	maxServerTimeout = time.Hour
	maxInflightCap   = 1_000_000
	maxIndexBoards   = 100_000
	maxIndexMembers  = 1_000_000_000
	minFeedLen       = 1000
	minAuditEntries  = 1000
	maxAuditEntries  = 100_000_000
	maxFeedLen       = 10_000_000
	maxIndexLag      = time.Minute
	maxCORSMaxAge    = 24 * time.Hour
	minTicketTTL     = time.Second
	maxTicketTTL     = 10 * time.Minute
	maxClockSkew     = 10 * time.Minute
	// maxClientEventsPerMinute bounds client_writes.max_events_per_minute:
	// the window is a sorted set of that many event ids per member.
	maxClientEventsPerMinute = 600
)

// validator collects field errors.
type validator struct{ errs []error }

func (v *validator) errorf(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) oneOf(key, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		v.errorf(key, "%q is not one of %s", val, strings.Join(allowed, ", "))
	}
}

func (v *validator) intRange(key string, val, lo, hi int) {
	if val < lo || val > hi {
		v.errorf(key, "%d is out of range %d..%d", val, lo, hi)
	}
}

func (v *validator) envName(key, val string) {
	if val != "" && !envNameRe.MatchString(val) {
		v.errorf(key, "%q is not an environment variable name", val)
	}
}

// Validate checks every setting and reports all problems at once, joined,
// each a *FieldError naming its key. It also fills the derived fields
// FamilyNames, Family.DimensionTypes and an empty Family.Name, so a Config
// built in code is usable after a successful Validate.
func (c *Config) Validate() error {
	v := &validator{}

	if _, err := checkHostPort(c.Listen, true); err != nil {
		v.errorf("listen", "%v", err)
	}
	c.validateRedis(v)
	v.envName("ledger.dsn_env", c.Ledger.DSNEnv)
	if d := c.Ledger.CommitLinger; d < 0 || d > maxCommitLinger {
		v.errorf("ledger.commit_linger", "%s is out of range 0..%s", d, maxCommitLinger)
	}
	v.intRange("ledger.commit_max_events", c.Ledger.CommitMaxEvents, 1, maxCommitEvents)
	c.validateAuth(v)
	c.validateLimits(v)
	c.validateServer(v)
	c.validateAwards(v)
	c.validateIndex(v)
	if a := c.Audit; a.MaxEntries < minAuditEntries || a.MaxEntries > maxAuditEntries {
		v.errorf("audit.max_entries", "%d is out of range %d..%d", a.MaxEntries, int64(minAuditEntries), int64(maxAuditEntries))
	}
	v.envName("audit.hmac_secret_env", c.Audit.HMACSecretEnv)
	c.validateLive(v)
	c.validateTournaments(v)

	c.FamilyNames = slices.Sorted(maps.Keys(c.Families))
	if len(c.Families) == 0 {
		v.errorf("families", "at least one family is required")
	}
	for _, name := range c.FamilyNames {
		validateFamily(v, name, c.Families[name])
		if f := c.Families[name]; f != nil && f.Cohorts != nil && f.Cohorts.Size > c.Limits.MaxTop {
			v.errorf("families."+name+".cohorts.size", "%d must be ≤ limits.max_top (%d): a cohort is read whole", f.Cohorts.Size, c.Limits.MaxTop)
		}
	}
	for _, name := range c.FamilyNames {
		if f := c.Families[name]; f != nil && f.Derived() && f.DerivedFrom != nil {
			c.validateDerivation(v, name, f)
		}
	}
	return errors.Join(v.errs...)
}

func sameSeason(a, b period.Season) bool {
	return a.ID == b.ID && a.Start.Equal(b.Start) && a.End.Equal(b.End)
}

// maxDerivedWeight bounds one input's weight of a derived family.
const maxDerivedWeight = 1000

// validateDerivation checks that a derived family can be computed shard by
// shard in-slot: its inputs exist, are not derived themselves, share its key
// group (one hash tag), its periods, order and tie policy, and every
// dimension it declares with the same shard count; and that no weighted
// total can leave its max_points.
func (c *Config) validateDerivation(v *validator, name string, f *Family) {
	p := "families." + name + ".derived_from"
	dv := f.DerivedFrom
	v.oneOf(p+".aggregate", dv.Aggregate, AggregateSum, AggregateMin, AggregateMax)
	if len(dv.Inputs) == 0 {
		v.errorf(p+".inputs", "at least one input family is required")
	}
	if f.Tie != TieMember {
		v.errorf("families."+name+".tie", "a derived family needs tie: member (weighted sums of tie-first scores mean nothing)")
	}
	var bound float64
	seen := map[string]bool{}
	for i, in := range dv.Inputs {
		ip := fmt.Sprintf("%s.inputs[%d]", p, i)
		src, ok := c.Families[in.Family]
		switch {
		case !ok || src == nil:
			v.errorf(ip+".family", "unknown family %q", in.Family)
			continue
		case in.Family == name:
			v.errorf(ip+".family", "a family cannot derive from itself")
			continue
		case src.Derived():
			v.errorf(ip+".family", "%s is derived itself; derive from event or projection families", in.Family)
			continue
		case seen[in.Family]:
			v.errorf(ip+".family", "%s is listed twice", in.Family)
		}
		seen[in.Family] = true
		if in.Weight == 0 || in.Weight > maxDerivedWeight || in.Weight < -maxDerivedWeight {
			v.errorf(ip+".weight", "%d must be a non-zero integer within ±%d", in.Weight, maxDerivedWeight)
		}
		if src.KeyGroup != f.KeyGroup {
			v.errorf(ip+".family", "%s has key_group %q, %s has %q: inputs must share the derived family's key_group so that each shard is combined in one slot",
				in.Family, src.KeyGroup, name, f.KeyGroup)
		}
		if src.Period != f.Period || src.Location.String() != f.Location.String() || src.WeekStart != f.WeekStart ||
			src.Reset != f.Reset || !slices.EqualFunc(src.Seasons, f.Seasons, sameSeason) {
			v.errorf(ip+".family", "%s has other periods (period, timezone, week_start) than %s", in.Family, name)
		}
		if src.Order != f.Order {
			v.errorf(ip+".family", "%s has order %s, %s has %s", in.Family, src.Order, name, f.Order)
		}
		if src.Tie != TieMember {
			v.errorf(ip+".family", "%s has tie: first; derived families combine tie: member inputs only", in.Family)
		}
		if len(src.Columns) > 0 {
			v.errorf(ip+".family", "%s has sort columns; derived family %s combines families without columns only (a weighted sum of points cannot say how to combine the inputs' columns)", in.Family, name)
		}
		for t, d := range f.Dimensions {
			sd, ok := src.Dimensions[t]
			if !ok {
				v.errorf(ip+".family", "%s has no dimension %q that %s declares", in.Family, t, name)
			} else if sd.Shards != d.Shards {
				v.errorf(fmt.Sprintf("families.%s.dimensions.%s.shards", name, t), "%d, but input %s has %d: all inputs must share the shard count",
					d.Shards, in.Family, sd.Shards)
			}
		}
		w := float64(in.Weight)
		if w < 0 {
			w = -w
		}
		bound += w * float64(src.MaxPoints)
	}
	if bound > float64(f.MaxPoints) {
		v.errorf("families."+name+".max_points", "%d is below what the weighted inputs can reach (%.0f): raise it (up to 2^53−1) or lower the weights or the inputs' max_points",
			f.MaxPoints, bound)
	}
}

func (c *Config) validateRedis(v *validator) {
	r := c.Redis
	if len(r.Addrs) == 0 {
		v.errorf("redis.addrs", "at least one address is required")
	}
	seen := map[string]bool{}
	for i, a := range r.Addrs {
		key := fmt.Sprintf("redis.addrs[%d]", i)
		if _, err := checkHostPort(a, false); err != nil {
			v.errorf(key, "%v", err)
		} else if seen[a] {
			v.errorf(key, "duplicate address %q", a)
		}
		seen[a] = true
	}
	if !prefixRe.MatchString(r.Prefix) {
		v.errorf("redis.prefix", "%q must match [a-z0-9_]{1,16}", r.Prefix)
	}
	v.envName("redis.password_env", r.PasswordEnv)
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{"redis.dial_timeout", r.DialTimeout},
		{"redis.read_timeout", r.ReadTimeout},
		{"redis.write_timeout", r.WriteTimeout},
	} {
		if t.d <= 0 || t.d > maxTimeout {
			v.errorf(t.key, "%s must be > 0 and ≤ %s", t.d, maxTimeout)
		}
	}
	v.intRange("redis.wait_replicas", r.WaitReplicas, 0, maxWaitReplicas)
	if d := r.ClusterReloadInterval; d < minClusterReload || d > maxClusterReload {
		v.errorf("redis.cluster_reload_interval", "%s is out of range %s..%s (a slow reload keeps dialling a dead master after failover)",
			d, minClusterReload, maxClusterReload)
	}
	v.intRange("redis.pool_size", r.PoolSize, 0, maxPoolSize)
	v.oneOf("redis.read_transport", r.ReadTransport, ReadTransportRueidis, ReadTransportGoRedis)
	r.buildTLS(v)
}

func (c *Config) validateAwards(v *validator) {
	w := c.Awards.Webhook
	v.envName("awards.webhook.url_env", w.URLEnv)
	v.envName("awards.webhook.secret_env", w.SecretEnv)
	if w.URLEnv != "" && w.SecretEnv == "" {
		v.errorf("awards.webhook.secret_env", "is required with url_env: every delivery is signed")
	}
	if w.Timeout <= 0 || w.Timeout > maxTimeout {
		v.errorf("awards.webhook.timeout", "%s must be > 0 and ≤ %s", w.Timeout, maxTimeout)
	}
	v.intRange("awards.webhook.max_attempts", w.MaxAttempts, 1, 100)
}

func (c *Config) validateAuth(v *validator) {
	seen := map[string]bool{}
	for i, t := range c.Auth.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		switch {
		case t.TokenEnv == "":
			v.errorf(key+".token_env", "is required")
		case seen[t.TokenEnv]:
			v.errorf(key+".token_env", "duplicate token_env %q", t.TokenEnv)
		default:
			v.envName(key+".token_env", t.TokenEnv)
		}
		seen[t.TokenEnv] = true
		if len(t.Scopes) == 0 {
			v.errorf(key+".scopes", "at least one of read, write, admin, awards is required")
		}
		for j, s := range t.Scopes {
			skey := fmt.Sprintf("%s.scopes[%d]", key, j)
			v.oneOf(skey, s, ScopeRead, ScopeWrite, ScopeAdmin, ScopeAwards)
			if slices.Index(t.Scopes, s) < j {
				v.errorf(skey, "duplicate scope %q", s)
			}
		}
		switch r := t.RatePerSecond; {
		case math.IsNaN(r) || r < 0 || r > maxRate:
			v.errorf(key+".rate_per_second", "%v is out of range 0..%g (0: unlimited)", r, float64(maxRate))
		case r == 0 && t.Burst != 0:
			v.errorf(key+".burst", "only used with rate_per_second")
		case r > 0:
			v.intRange(key+".burst", t.Burst, 1, maxBurst)
		}
	}
	if t := c.Auth.Tickets.TTL; t < minTicketTTL || t > maxTicketTTL {
		v.errorf("auth.tickets.ttl", "%s is out of range %s..%s", t, minTicketTTL, maxTicketTTL)
	}
	c.validateJWT(v)
	if len(c.Auth.Tokens) == 0 && c.Auth.JWT == nil && c.Listen != "" && !c.ListenIsLoopback() {
		v.errorf("auth.tokens", "required: listen %q is not loopback-only, and without tokens the gateway is open only on loopback", c.Listen)
	}
}

var (
	kidRe   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	claimRe = regexp.MustCompile(`^[A-Za-z0-9_:./-]{1,64}$`)
)

func (c *Config) validateJWT(v *validator) {
	j := c.Auth.JWT
	if j == nil {
		return
	}
	if !claimRe.MatchString(j.MemberClaim) {
		v.errorf("auth.jwt.member_claim", "%q is not a claim name ([A-Za-z0-9_:./-]{1,64})", j.MemberClaim)
	}
	if j.ClockSkew < 0 || j.ClockSkew > maxClockSkew {
		v.errorf("auth.jwt.clock_skew", "%s is out of range 0..%s", j.ClockSkew, maxClockSkew)
	}
	if j.ReloadInterval != 0 && (j.ReloadInterval < time.Second || j.ReloadInterval > time.Hour) {
		v.errorf("auth.jwt.reload_interval", "%s is out of range 1s..1h (0: only on SIGHUP)", j.ReloadInterval)
	}
	if len(j.Keys) == 0 {
		v.errorf("auth.jwt.keys", "at least one key is required")
	}
	kids := map[string]bool{}
	for i, k := range j.Keys {
		key := fmt.Sprintf("auth.jwt.keys[%d]", i)
		switch {
		case k.Kid == "" && len(j.Keys) > 1:
			v.errorf(key+".kid", "is required when there are several keys (a token's kid picks one)")
		case k.Kid != "" && !kidRe.MatchString(k.Kid):
			v.errorf(key+".kid", "%q must match [A-Za-z0-9._-]{1,64}", k.Kid)
		case kids[k.Kid]:
			v.errorf(key+".kid", "duplicate kid %q", k.Kid)
		}
		kids[k.Kid] = true
		v.oneOf(key+".alg", k.Alg, AlgHS256, AlgES256, AlgRS256, AlgEdDSA)
		if k.Alg == AlgHS256 {
			if k.SecretEnv == "" {
				v.errorf(key+".secret_env", "is required with alg HS256")
			}
			v.envName(key+".secret_env", k.SecretEnv)
			if k.PublicKeyFile != "" {
				v.errorf(key+".public_key_file", "not used with alg HS256 (a shared secret)")
			}
		} else if k.Alg != "" {
			if k.PublicKeyFile == "" {
				v.errorf(key+".public_key_file", "is required with alg %s", k.Alg)
			}
			if k.SecretEnv != "" {
				v.errorf(key+".secret_env", "only used with alg HS256")
			}
		}
	}
}

func (c *Config) validateIndex(v *validator) {
	x := c.Index
	v.intRange("index.max_boards", x.MaxBoards, 1, maxIndexBoards)
	if x.MaxMembers < 1 || x.MaxMembers > maxIndexMembers {
		v.errorf("index.max_members", "%d is out of range 1..%d", x.MaxMembers, int64(maxIndexMembers))
	}
	if x.FeedLen < minFeedLen || x.FeedLen > maxFeedLen {
		v.errorf("index.feed_len", "%d is out of range %d..%d", x.FeedLen, minFeedLen, maxFeedLen)
	}
	if x.IdleAfter < time.Second {
		v.errorf("index.idle_after", "%s must be ≥ 1s", x.IdleAfter)
	}
	if x.PollInterval < time.Millisecond || x.PollInterval > time.Second {
		v.errorf("index.poll_interval", "%s is out of range 1ms..1s", x.PollInterval)
	}
	if x.PollIdle < x.PollInterval || x.PollIdle > 10*time.Second {
		v.errorf("index.poll_idle", "%s is out of range poll_interval (%s)..10s", x.PollIdle, x.PollInterval)
	}
}

// Live boards: a stream per subscriber, one computation per board and query
// shape per interval.
const (
	maxLiveSubscribers = 1_000_000
	minLiveInterval    = 100 * time.Millisecond
	maxLiveInterval    = time.Minute
)

func (c *Config) validateLive(v *validator) {
	x := c.Live
	v.intRange("live.max_subscribers", x.MaxSubscribers, 1, maxLiveSubscribers)
	v.intRange("live.max_per_token", x.MaxPerToken, 1, x.MaxSubscribers)
	if x.Heartbeat < time.Second || x.Heartbeat > 5*time.Minute {
		v.errorf("live.heartbeat", "%s is out of range 1s..5m", x.Heartbeat)
	}
	if x.WriteTimeout < 100*time.Millisecond || x.WriteTimeout > time.Minute {
		v.errorf("live.write_timeout", "%s is out of range 100ms..1m", x.WriteTimeout)
	}
	if x.MaxBehind < time.Second || x.MaxBehind > 10*time.Minute {
		v.errorf("live.max_behind", "%s is out of range 1s..10m", x.MaxBehind)
	}
}

// maxActiveTournaments bounds tournaments.max_active.
const maxActiveTournaments = 100_000

func (c *Config) validateTournaments(v *validator) {
	x := c.Tournaments
	v.intRange("tournaments.max_active", x.MaxActive, 1, maxActiveTournaments)
	v.intRange("tournaments.defaults.shards", x.Defaults.Shards, 1, maxShards)
	if d := x.Defaults.CacheTTL; d < 0 || d > time.Minute {
		v.errorf("tournaments.defaults.cache_ttl", "%s is out of range 0s..1m (0 disables the cache)", d)
	}
	if d := x.Defaults.Grace; d < 0 || d > 24*time.Hour {
		v.errorf("tournaments.defaults.grace", "%s is out of range 0s..24h", d)
	}
	if d := x.Defaults.Retention; d <= 0 {
		v.errorf("tournaments.defaults.retention", "%s must be > 0", d)
	}
}

// CheckFamily validates a family built in code (a tournament's rules) the
// way Validate checks a configured one, and fills its derived fields. Each
// error is a *FieldError whose key is relative to the family ("aggregate",
// "columns[0].max", "dimensions.national.shards").
func CheckFamily(name string, f *Family) []*FieldError {
	v := &validator{}
	validateFamilyAt(v, "f", name, f)
	out := make([]*FieldError, 0, len(v.errs))
	for _, err := range v.errs {
		fe, ok := err.(*FieldError)
		if !ok {
			fe = &FieldError{Msg: err.Error()}
		}
		key := strings.TrimPrefix(strings.TrimPrefix(fe.Key, "f"), ".")
		out = append(out, &FieldError{Key: key, Msg: fe.Msg})
	}
	return out
}

func (c *Config) validateLimits(v *validator) {
	l := c.Limits
	v.intRange("limits.max_top", l.MaxTop, 1, maxTopCap)
	v.intRange("limits.max_offset", l.MaxOffset, 1, maxOffsetCap)
	v.intRange("limits.max_radius", l.MaxRadius, 1, maxRadiusCap)
	v.intRange("limits.max_batch", l.MaxBatch, 1, maxBatchCap)
	v.intRange("limits.max_lookup", l.MaxLookup, 1, maxLookupCap)
}

func (c *Config) validateServer(v *validator) {
	s := c.Server
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{"server.read_header_timeout", s.ReadHeaderTimeout},
		{"server.read_timeout", s.ReadTimeout},
		{"server.write_timeout", s.WriteTimeout},
		{"server.idle_timeout", s.IdleTimeout},
		{"server.request_timeout", s.RequestTimeout},
	} {
		if t.d <= 0 || t.d > maxServerTimeout {
			v.errorf(t.key, "%s must be > 0 and ≤ %s", t.d, maxServerTimeout)
		}
	}
	if s.ReadHeaderTimeout > s.ReadTimeout && s.ReadTimeout > 0 {
		v.errorf("server.read_header_timeout", "%s must be ≤ server.read_timeout (%s)", s.ReadHeaderTimeout, s.ReadTimeout)
	}
	if s.RequestTimeout > s.WriteTimeout && s.WriteTimeout > 0 {
		v.errorf("server.request_timeout", "%s must be ≤ server.write_timeout (%s): a request still running at the write deadline cannot be answered",
			s.RequestTimeout, s.WriteTimeout)
	}
	v.intRange("server.max_inflight", s.MaxInflight, 1, maxInflightCap)
	v.intRange("server.gc_min_heap_mib", s.GCMinHeapMiB, 0, maxGCMinHeapMiB)
	for i, o := range s.CORS.AllowedOrigins {
		key := fmt.Sprintf("server.cors.allowed_origins[%d]", i)
		if err := checkOrigin(o); err != nil {
			v.errorf(key, "%v", err)
		} else if slices.Index(s.CORS.AllowedOrigins, o) < i {
			v.errorf(key, "duplicate origin %q", o)
		}
	}
	if a := s.CORS.MaxAge; a < 0 || a > maxCORSMaxAge {
		v.errorf("server.cors.max_age", "%s is out of range 0..%s", a, maxCORSMaxAge)
	}
}

// maxGCMinHeapMiB bounds server.gc_min_heap_mib (64 GiB).
const maxGCMinHeapMiB = 65536

// checkOrigin accepts an origin as a browser sends it in the Origin header
// (RFC 6454 serialisation): lower-case http or https, a host, a port only
// when it is not the scheme's default, and nothing else — no path, no
// trailing slash, no wildcard. Anything else would never match.
func checkOrigin(o string) error {
	scheme, rest, ok := strings.Cut(o, "://")
	switch {
	case strings.Contains(o, "*"):
		return fmt.Errorf("%q: wildcards are not allowed; list each origin", o)
	case !ok || (scheme != "http" && scheme != "https"):
		return fmt.Errorf("%q: want http://host[:port] or https://host[:port]", o)
	case rest == "":
		return fmt.Errorf("%q has no host", o)
	case strings.ContainsAny(rest, "/?#@ \t"):
		return fmt.Errorf("%q: an origin is scheme://host[:port] only, without a path (not even a trailing /), query or user", o)
	case strings.ToLower(o) != o:
		return fmt.Errorf("%q: browsers send origins in lower case; write it so", o)
	}
	host, port, hasPort := rest, "", false
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port, hasPort = h, p, true
	} else if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") && net.ParseIP(rest[1:len(rest)-1]) != nil {
		host = rest
	} else if strings.Contains(rest, ":") || strings.ContainsAny(rest, "[]") {
		return fmt.Errorf("%q: invalid host:port: %v", o, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", o)
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		switch {
		case err != nil || n < 1 || n > 65535:
			return fmt.Errorf("%q: port %q is not 1..65535", o, port)
		case (scheme == "http" && n == 80) || (scheme == "https" && n == 443):
			return fmt.Errorf("%q: browsers leave out the default port %d; write %s://%s", o, n, scheme, host)
		case port != strconv.Itoa(n):
			return fmt.Errorf("%q: port %q is not written as browsers write it", o, port)
		}
	}
	return nil
}

func validateFamily(v *validator, name string, f *Family) {
	validateFamilyAt(v, "families."+name, name, f)
}

// validateFamilyAt checks family name at key p.
func validateFamilyAt(v *validator, p, name string, f *Family) {
	if !familyNameRe.MatchString(name) {
		v.errorf(p, "invalid family name %q: must match [a-z0-9_-]{1,32}", name)
	}
	if f == nil {
		v.errorf(p, "is empty")
		return
	}
	if f.KeyGroup == "" {
		f.KeyGroup = name
	}
	if f.Name == "" {
		f.Name = name
	} else if f.Name != name {
		v.errorf(p, "Name %q does not match its key", f.Name)
	}

	v.oneOf(p+".source", f.Source, SourceEvents, SourceProjection, SourceDerived)
	if f.KeyGroup != "" && !familyNameRe.MatchString(f.KeyGroup) {
		v.errorf(p+".key_group", "invalid key group %q: must match [a-z0-9_-]{1,32}", f.KeyGroup)
	}
	if f.Source == SourceDerived {
		if f.Aggregate != "" {
			v.errorf(p+".aggregate", "a derived family combines its inputs with derived_from.aggregate")
		}
		if f.DerivedFrom == nil {
			v.errorf(p+".derived_from", "is required with source: derived")
		}
	} else if f.DerivedFrom != nil {
		v.errorf(p+".derived_from", "only used with source: derived")
	} else if f.Source == SourceProjection {
		if f.Aggregate != "" {
			v.errorf(p+".aggregate", "only used with source: events (a projection sets the absolute total)")
		}
	} else {
		v.oneOf(p+".aggregate", f.Aggregate, AggregateSum, AggregateMax, AggregateMin)
	}
	v.oneOf(p+".order", f.Order, OrderDesc, OrderAsc)
	v.oneOf(p+".period", f.Period, PeriodHour, PeriodDay, PeriodWeek, PeriodMonth, PeriodAll, PeriodSeasons, PeriodCron)
	if f.Location == nil {
		v.errorf(p+".timezone", "is required")
	}
	validatePeriodShape(v, p, f)
	validateLifecycle(v, p, f)
	if f.WeekStart < time.Sunday || f.WeekStart > time.Saturday {
		v.errorf(p+".week_start", "%d is not a weekday", f.WeekStart)
	}
	if f.Grace < 0 {
		v.errorf(p+".grace", "%s must be ≥ 0", f.Grace)
	}
	if f.Retention <= 0 {
		v.errorf(p+".retention", "%s must be > 0", f.Retention)
	}
	if f.CacheTTL < 0 {
		v.errorf(p+".cache_ttl", "%s must be ≥ 0 (0 disables the cache)", f.CacheTTL)
	}
	if f.CacheShared && f.CacheTTL <= 0 {
		v.errorf(p+".cache_shared", "needs a cache: set cache_ttl > 0")
	}
	v.oneOf(p+".tie", f.Tie, TieMember, TieFirst)
	v.oneOf(p+".rank", f.Rank, RankOrdinal, RankCompetition)
	if !rulesRe.MatchString(f.RulesVersion) {
		v.errorf(p+".rules_version", "%q must be 1..64 printable characters without spaces", f.RulesVersion)
	}
	validateScore(v, p, f)
	validateColumns(v, p, f)
	validateCohorts(v, p, f)
	validateDimensions(v, p, f)
	// max_lag matters only with the index on (a hand-built Config of a
	// family without one may leave it zero).
	if (f.Index.Enabled || f.Index.MaxLag != 0) && (f.Index.MaxLag <= 0 || f.Index.MaxLag > maxIndexLag) {
		v.errorf(p+".index.max_lag", "%s is out of range (0, %s]", f.Index.MaxLag, maxIndexLag)
	}
	if cw := f.ClientWrites; cw != nil {
		if f.Source != SourceEvents {
			v.errorf(p+".client_writes", "only families with source: events take events from player tokens")
		}
		if cw.MaxDelta < 1 || (f.MaxPoints > 0 && cw.MaxDelta > f.MaxPoints) {
			v.errorf(p+".client_writes.max_delta", "%d is out of range 1..max_points (%d)", cw.MaxDelta, f.MaxPoints)
		}
		v.intRange(p+".client_writes.max_events_per_minute", cw.MaxEventsPerMinute, 1, maxClientEventsPerMinute)
	}
	if f.Live.Interval < minLiveInterval || f.Live.Interval > maxLiveInterval {
		v.errorf(p+".live.interval", "%s is out of range %s..%s", f.Live.Interval, minLiveInterval, maxLiveInterval)
	}
}

var columnNameRe = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// validateColumns checks the sort columns: at most rank.MaxColumns, unique
// names, an order, a max in 1..2^53−1, an aggregate only in sum families.
func validateColumns(v *validator, p string, f *Family) {
	if len(f.Columns) == 0 {
		return
	}
	if len(f.Columns) > rank.MaxColumns {
		v.errorf(p+".columns", "at most %d columns after points, got %d", rank.MaxColumns, len(f.Columns))
	}
	if f.Derived() {
		v.errorf(p+".columns", "a derived family sums its inputs' points; it cannot keep columns")
	}
	seen := map[string]bool{}
	for i, c := range f.Columns {
		cp := fmt.Sprintf("%s.columns[%d]", p, i)
		if !columnNameRe.MatchString(c.Name) {
			v.errorf(cp+".name", "%q must match [a-z0-9_]{1,32}", c.Name)
		} else if seen[c.Name] {
			v.errorf(cp+".name", "%q is declared twice", c.Name)
		}
		seen[c.Name] = true
		v.oneOf(cp+".order", c.Order, OrderAsc, OrderDesc)
		if c.Max < 1 || c.Max > MaxPointsLimit {
			v.errorf(cp+".max", "%d is out of range 1..%d (2^53 − 1)", c.Max, MaxPointsLimit)
		}
		switch {
		case f.Aggregate == AggregateSum:
			if c.Aggregate != "" {
				v.oneOf(cp+".aggregate", c.Aggregate, ColumnSum, ColumnLast, ColumnMax, ColumnMin)
			}
		case c.Aggregate != "":
			v.errorf(cp+".aggregate", "only used in sum families (max/min families and projections keep the whole tuple)")
		}
	}
}

// validatePeriodShape checks seasons (period: seasons) and reset (period:
// cron), and that neither is set for another period kind.
func validatePeriodShape(v *validator, p string, f *Family) {
	switch f.Period {
	case PeriodSeasons:
		if err := period.CheckSeasons(f.Seasons); err != nil {
			v.errorf(p+".seasons", "%v", err)
		}
	default:
		if f.Seasons != nil {
			v.errorf(p+".seasons", "only used with period: seasons")
		}
	}
	switch f.Period {
	case PeriodCron:
		if f.Reset == "" {
			v.errorf(p+".reset", "is required with period: cron (a 5-field cron expression such as \"0 4 * * 1\")")
		} else if err := period.ParseCron(f.Reset, f.Location); err != nil {
			v.errorf(p+".reset", "%v", err)
		}
		if f.Duration < 0 {
			v.errorf(p+".duration", "%s must be > 0", f.Duration)
		}
	default:
		if f.Reset != "" {
			v.errorf(p+".reset", "only used with period: cron")
		}
		if f.Duration != 0 {
			v.errorf(p+".duration", "only used with period: cron")
		}
	}
}

// maxStepAfter bounds a lifecycle step's delay.
const maxStepAfter = 366 * 24 * time.Hour

func validateLifecycle(v *validator, p string, f *Family) {
	lc := f.Lifecycle
	if lc == nil {
		return
	}
	p += ".lifecycle"
	v.oneOf(p+".freeze", lc.Freeze, FreezeAuto, FreezeManual)
	if f.Period == PeriodAll {
		v.errorf(p, "period: all never ends, so there is nothing to schedule; remove lifecycle")
	}
	for _, st := range []struct {
		key  string
		step *LifecycleStep
	}{{p + ".settle", lc.Settle}, {p + ".archive", lc.Archive}} {
		if st.step != nil && (st.step.After < 0 || st.step.After > maxStepAfter) {
			v.errorf(st.key+".after", "%s is out of range 0s..%s", st.step.After, maxStepAfter)
		}
	}
	if lc.Settle != nil {
		v.intRange(p+".settle.top", lc.Settle.Top, 1, maxTopCap)
	}
}

// validateScore checks the score bound: under tie "first" every score
// points × B + (B − 1 − seq), |points| ≤ max_points, 0 ≤ seq < B, must stay
// within ±2^53, i.e. (max_points + 1) × B ≤ 2^53.
func validateScore(v *validator, p string, f *Family) {
	if f.MaxPoints < 1 || f.MaxPoints > MaxPointsLimit {
		v.errorf(p+".max_points", "%d is out of range 1..%d (2^53 − 1)", f.MaxPoints, MaxPointsLimit)
		return
	}
	switch f.Tie {
	case TieFirst:
		b := f.SeqCapacity
		if b < 2 {
			v.errorf(p+".seq_capacity", "%d must be ≥ 2", b)
			return
		}
		if len(f.Columns) > 0 {
			// The seq lives in the stored member, not in the score.
			if b > ScoreLimit {
				v.errorf(p+".seq_capacity", "%d must be ≤ 2^53", b)
			}
			return
		}
		// (max_points + 1) × B ≤ 2^53  ⇔  max_points + 1 ≤ ⌊2^53 / B⌋ (no overflow).
		if limit := ScoreLimit / b; f.MaxPoints+1 > limit {
			var fixes []string
			if limit >= 2 {
				fixes = append(fixes, fmt.Sprintf("max_points ≤ %d", limit-1))
			}
			if bMax := ScoreLimit / (f.MaxPoints + 1); bMax >= 2 {
				fixes = append(fixes, fmt.Sprintf("seq_capacity ≤ %d", bMax))
			}
			if len(fixes) == 0 {
				fixes = append(fixes, "tie: member")
			}
			v.errorf(p+".seq_capacity",
				"max_points (%d) × seq_capacity (%d) leaves ±2^53: tie first needs (max_points + 1) × seq_capacity ≤ 2^53 (%d); use %s",
				f.MaxPoints, b, ScoreLimit, strings.Join(fixes, " or "))
		}
	default:
		if f.SeqCapacity != 0 {
			v.errorf(p+".seq_capacity", "only used with tie: first")
		}
	}
}

var tierRe = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// MaxCohortSize bounds cohorts.size (a cohort is read whole at the week end).
const MaxCohortSize = 1000

// MaxTiers bounds cohorts.tiers.
const MaxTiers = 64

// validateCohorts checks a league's cohorts and adds the cohort dimension
// (one shard per cohort board).
func validateCohorts(v *validator, p string, f *Family) {
	c := f.Cohorts
	if c == nil {
		return
	}
	cp := p + ".cohorts"
	if f.Source != SourceEvents {
		v.errorf(cp, "only families with source: events place members in cohorts")
	}
	if len(f.Columns) > 0 {
		v.errorf(cp, "a league ranks its cohorts by points and the tie rule; it cannot have columns")
	}
	if c.Size < 1 || c.Size > MaxCohortSize {
		v.errorf(cp+".size", "%d is out of range 1..%d", c.Size, MaxCohortSize)
	}
	switch {
	case len(c.Tiers) == 0:
		v.errorf(cp+".tiers", "at least one tier is required (lowest first)")
	case len(c.Tiers) > MaxTiers:
		v.errorf(cp+".tiers", "at most %d tiers, got %d", MaxTiers, len(c.Tiers))
	}
	for i, t := range c.Tiers {
		key := fmt.Sprintf("%s.tiers[%d]", cp, i)
		if !tierRe.MatchString(t) {
			v.errorf(key, "%q must match [a-z0-9_]{1,32}", t)
		} else if slices.Index(c.Tiers, t) < i {
			v.errorf(key, "tier %q is listed twice", t)
		}
	}
	if c.Promote < 0 {
		v.errorf(cp+".promote", "%d must be ≥ 0", c.Promote)
	}
	if c.Demote < 0 {
		v.errorf(cp+".demote", "%d must be ≥ 0", c.Demote)
	}
	if c.Promote >= 0 && c.Demote >= 0 && c.Size >= 1 && c.Promote+c.Demote > c.Size {
		v.errorf(cp+".promote", "promote (%d) + demote (%d) must be ≤ size (%d)", c.Promote, c.Demote, c.Size)
	}
	if d, ok := f.Dimensions[DimCohort]; ok && d.Shards != 1 {
		v.errorf(p+".dimensions."+DimCohort, "the cohort boards of a league are one shard each; leave the dimension out")
	} else if f.Dimensions != nil {
		f.Dimensions[DimCohort] = Dimension{Shards: 1}
	}
}

func validateDimensions(v *validator, p string, f *Family) {
	f.DimensionTypes = nil
	if _, ok := f.Dimensions[DimNational]; !ok {
		v.errorf(p+".dimensions."+DimNational, "is required")
	}
	for _, t := range slices.Sorted(maps.Keys(f.Dimensions)) {
		key := p + ".dimensions." + t
		if !dimTypeRe.MatchString(t) {
			v.errorf(key, "invalid dimension type %q: must match [a-z0-9_]{1,32}", t)
		}
		v.intRange(key+".shards", f.Dimensions[t].Shards, 1, maxShards)
		if t != DimNational {
			f.DimensionTypes = append(f.DimensionTypes, t)
		}
	}
}

// checkHostPort checks host:port; an empty host is allowed only for a listen
// address, port 0 likewise (an ephemeral port, for tests).
func checkHostPort(s string, listen bool) (string, error) {
	if s == "" {
		return "", errors.New("is required (host:port)")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port", s)
	}
	if host == "" && !listen {
		return "", fmt.Errorf("%q has no host", s)
	}
	lo := 1
	if listen {
		lo = 0
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < lo || n > 65535 {
		return "", fmt.Errorf("%q has an invalid port (want %d..65535)", s, lo)
	}
	return host, nil
}

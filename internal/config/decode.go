package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rankgate/rankgate/internal/period"
)

// decode walks the YAML node tree itself (rather than yaml's KnownFields)
// so that every error can name the full dotted key path.
func decode(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("invalid YAML: %w", err)
		}
		return nil, errors.New("invalid YAML: more than one document; want exactly one")
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}

	d := &decoder{}
	c := d.config(root)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return c, nil
}

type decoder struct {
	errs []error
}

// field decodes the value node of one key; key is its full dotted path.
type field func(n *yaml.Node, key string)

func (d *decoder) fail(key string, n *yaml.Node, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if n != nil && n.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", n.Line)
	}
	d.errs = append(d.errs, &FieldError{Key: key, Msg: msg})
}

func (d *decoder) config(root *yaml.Node) *Config {
	c := Default()
	r := &c.Redis
	d.fields(root, "", map[string]field{
		"listen": d.str(&c.Listen),
		"redis": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{
				"addrs":                    d.strs(&r.Addrs),
				"prefix":                   d.str(&r.Prefix),
				"username":                 d.str(&r.Username),
				"password_env":             d.str(&r.PasswordEnv),
				"tls":                      d.bool(&r.TLS),
				"tls_ca_file":              d.str(&r.TLSCAFile),
				"tls_cert_file":            d.str(&r.TLSCertFile),
				"tls_key_file":             d.str(&r.TLSKeyFile),
				"tls_server_name":          d.str(&r.TLSServerName),
				"tls_insecure_skip_verify": d.bool(&r.TLSInsecureSkipVerify),
				"dial_timeout":             d.duration(&r.DialTimeout),
				"read_timeout":             d.duration(&r.ReadTimeout),
				"write_timeout":            d.duration(&r.WriteTimeout),
				"replica_reads":            d.bool(&r.ReplicaReads),
				"wait_replicas":            intField(d, &r.WaitReplicas),
				"cluster_reload_interval":  d.duration(&r.ClusterReloadInterval),
				"pool_size":                intField(d, &r.PoolSize),
				"read_transport":           d.str(&r.ReadTransport),
			})
		},
		"ledger": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{
				"dsn_env":           d.str(&c.Ledger.DSNEnv),
				"commit_linger":     d.duration(&c.Ledger.CommitLinger),
				"commit_max_events": intField(d, &c.Ledger.CommitMaxEvents),
			})
		},
		"auth": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{
				"tokens": d.tokens(&c.Auth.Tokens),
				"tickets": func(n *yaml.Node, key string) {
					d.fields(n, key, map[string]field{"ttl": d.duration(&c.Auth.Tickets.TTL)})
				},
				"jwt": d.jwt(&c.Auth.JWT),
			})
		},
		"limits": func(n *yaml.Node, key string) {
			l := &c.Limits
			d.fields(n, key, map[string]field{
				"max_top":    intField(d, &l.MaxTop),
				"max_offset": intField(d, &l.MaxOffset),
				"max_radius": intField(d, &l.MaxRadius),
				"max_batch":  intField(d, &l.MaxBatch),
				"max_lookup": intField(d, &l.MaxLookup),
			})
		},
		"server": func(n *yaml.Node, key string) {
			s := &c.Server
			d.fields(n, key, map[string]field{
				"read_header_timeout": d.duration(&s.ReadHeaderTimeout),
				"read_timeout":        d.duration(&s.ReadTimeout),
				"write_timeout":       d.duration(&s.WriteTimeout),
				"idle_timeout":        d.duration(&s.IdleTimeout),
				"request_timeout":     d.duration(&s.RequestTimeout),
				"max_inflight":        intField(d, &s.MaxInflight),
				"gc_min_heap_mib":     intField(d, &s.GCMinHeapMiB),
				"cors": func(n *yaml.Node, key string) {
					d.fields(n, key, map[string]field{
						"allowed_origins": d.strs(&s.CORS.AllowedOrigins),
						"max_age":         d.duration(&s.CORS.MaxAge),
					})
				},
			})
		},
		"awards": func(n *yaml.Node, key string) {
			w := &c.Awards.Webhook
			d.fields(n, key, map[string]field{
				"webhook": func(n *yaml.Node, key string) {
					d.fields(n, key, map[string]field{
						"url_env":      d.str(&w.URLEnv),
						"secret_env":   d.str(&w.SecretEnv),
						"timeout":      d.duration(&w.Timeout),
						"max_attempts": intField(d, &w.MaxAttempts),
					})
				},
			})
		},
		"index": func(n *yaml.Node, key string) {
			x := &c.Index
			d.fields(n, key, map[string]field{
				"max_boards":    intField(d, &x.MaxBoards),
				"max_members":   intField(d, &x.MaxMembers),
				"feed_len":      intField(d, &x.FeedLen),
				"idle_after":    d.duration(&x.IdleAfter),
				"poll_interval": d.duration(&x.PollInterval),
				"poll_idle":     d.duration(&x.PollIdle),
			})
		},
		"live": func(n *yaml.Node, key string) {
			x := &c.Live
			d.fields(n, key, map[string]field{
				"max_subscribers": intField(d, &x.MaxSubscribers),
				"max_per_token":   intField(d, &x.MaxPerToken),
				"heartbeat":       d.duration(&x.Heartbeat),
				"write_timeout":   d.duration(&x.WriteTimeout),
				"max_behind":      d.duration(&x.MaxBehind),
			})
		},
		"tournaments": func(n *yaml.Node, key string) {
			x := &c.Tournaments
			d.fields(n, key, map[string]field{
				"enabled":    d.bool(&x.Enabled),
				"max_active": intField(d, &x.MaxActive),
				"defaults": func(n *yaml.Node, key string) {
					df := &x.Defaults
					d.fields(n, key, map[string]field{
						"shards":    intField(d, &df.Shards),
						"cache_ttl": d.duration(&df.CacheTTL),
						"grace":     d.duration(&df.Grace),
						"retention": d.duration(&df.Retention),
					})
				},
			})
		},
		"audit": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{
				"max_entries":     intField(d, &c.Audit.MaxEntries),
				"hmac_secret_env": d.str(&c.Audit.HMACSecretEnv),
			})
		},
		"tracing": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{"enabled": d.bool(&c.Tracing.Enabled)})
		},
		"families": d.families(c),
	})
	return c
}

func (d *decoder) tokens(dst *[]Token) field {
	return func(n *yaml.Node, key string) {
		items, ok := d.seq(n, key)
		if !ok {
			return
		}
		out := make([]Token, 0, len(items))
		for i, item := range items {
			var t Token
			set := d.fields(item, fmt.Sprintf("%s[%d]", key, i), map[string]field{
				"token_env":       d.str(&t.TokenEnv),
				"scopes":          d.strs(&t.Scopes),
				"rate_per_second": d.float(&t.RatePerSecond),
				"burst":           intField(d, &t.Burst),
			})
			if !set["burst"] && t.RatePerSecond > 0 {
				t.Burst = max(1, int(math.Min(math.Ceil(t.RatePerSecond), maxBurst)))
			}
			out = append(out, t)
		}
		*dst = out
	}
}

func (d *decoder) jwt(dst **JWT) field {
	return func(n *yaml.Node, key string) {
		j := &JWT{MemberClaim: "sub", ClockSkew: 30 * time.Second}
		d.fields(n, key, map[string]field{
			"issuer":          d.str(&j.Issuer),
			"audience":        d.str(&j.Audience),
			"member_claim":    d.str(&j.MemberClaim),
			"clock_skew":      d.duration(&j.ClockSkew),
			"reload_interval": d.duration(&j.ReloadInterval),
			"keys": func(n *yaml.Node, key string) {
				items, ok := d.seq(n, key)
				if !ok {
					return
				}
				for i, item := range items {
					var k JWTKey
					d.fields(item, fmt.Sprintf("%s[%d]", key, i), map[string]field{
						"kid":             d.str(&k.Kid),
						"alg":             d.str(&k.Alg),
						"secret_env":      d.str(&k.SecretEnv),
						"public_key_file": d.str(&k.PublicKeyFile),
					})
					j.Keys = append(j.Keys, k)
				}
			},
		})
		*dst = j
	}
}

func (d *decoder) families(c *Config) field {
	return func(n *yaml.Node, key string) {
		ps, _ := d.pairs(n, key)
		for _, p := range ps {
			c.Families[p.key] = d.family(p.key, p.v, join(key, p.key))
		}
	}
}

func (d *decoder) family(name string, n *yaml.Node, path string) *Family {
	f := defaultFamily(name)
	set := d.fields(n, path, map[string]field{
		"source":        d.str(&f.Source),
		"aggregate":     d.str(&f.Aggregate),
		"order":         d.str(&f.Order),
		"period":        d.str(&f.Period),
		"seasons":       d.seasons(&f.Seasons),
		"reset":         d.str(&f.Reset),
		"timezone":      d.location(&f.Location),
		"week_start":    d.weekday(&f.WeekStart),
		"grace":         d.duration(&f.Grace),
		"retention":     d.duration(&f.Retention),
		"cache_ttl":     d.duration(&f.CacheTTL),
		"cache_shared":  d.bool(&f.CacheShared),
		"tie":           d.str(&f.Tie),
		"rank":          d.str(&f.Rank),
		"max_points":    intField(d, &f.MaxPoints),
		"seq_capacity":  intField(d, &f.SeqCapacity),
		"columns":       d.columns(&f.Columns),
		"rules_version": d.str(&f.RulesVersion),
		"dimensions":    d.dimensions(&f.Dimensions),
		"key_group":     d.str(&f.KeyGroup),
		"derived_from":  d.derivation(&f.DerivedFrom),
		"lifecycle":     d.lifecycle(&f.Lifecycle),
		"index": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{
				"enabled": d.bool(&f.Index.Enabled),
				"max_lag": d.duration(&f.Index.MaxLag),
			})
		},
		"live": func(n *yaml.Node, key string) {
			d.fields(n, key, map[string]field{
				"interval": d.duration(&f.Live.Interval),
			})
		},
		"client_writes": func(n *yaml.Node, key string) {
			cw := &ClientWrites{}
			d.fields(n, key, map[string]field{
				"max_delta":             intField(d, &cw.MaxDelta),
				"max_events_per_minute": intField(d, &cw.MaxEventsPerMinute),
			})
			f.ClientWrites = cw
		},
		"cohorts": func(n *yaml.Node, key string) {
			c := &Cohorts{}
			d.fields(n, key, map[string]field{
				"size":    intField(d, &c.Size),
				"tiers":   d.strs(&c.Tiers),
				"promote": intField(d, &c.Promote),
				"demote":  intField(d, &c.Demote),
			})
			f.Cohorts = c
		},
	})
	// Defaults that depend on other keys.
	if f.KeyGroup == "" {
		f.KeyGroup = name
	}
	if !set["aggregate"] && f.Source == SourceEvents {
		f.Aggregate = AggregateSum
	}
	if f.Tie == TieFirst {
		if !set["max_points"] {
			f.MaxPoints = DefaultTieFirstMaxPoints
		}
		if !set["seq_capacity"] {
			f.SeqCapacity = DefaultSeqCapacity
		}
	} else if !set["max_points"] {
		f.MaxPoints = MaxPointsLimit
	}
	return f
}

// seasons decodes [{id, starts, ends}], times in RFC 3339 with an offset.
func (d *decoder) seasons(dst *[]period.Season) field {
	return func(n *yaml.Node, key string) {
		items, ok := d.seq(n, key)
		if !ok {
			return
		}
		out := make([]period.Season, 0, len(items))
		for i, it := range items {
			var s period.Season
			p := fmt.Sprintf("%s[%d]", key, i)
			d.fields(it, p, map[string]field{
				"id":     d.str(&s.ID),
				"starts": d.instant(&s.Start),
				"ends":   d.instant(&s.End),
			})
			out = append(out, s)
		}
		*dst = out
	}
}

// instant decodes an RFC 3339 time with an explicit offset ("Z" or ±hh:mm).
func (d *decoder) instant(dst *time.Time) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "an RFC 3339 time"); n == nil {
			return
		}
		t, err := time.Parse(time.RFC3339, n.Value)
		if err != nil {
			d.fail(key, n, "invalid time %q: want RFC 3339 with an offset, such as 2026-12-01T00:00:00Z", n.Value)
			return
		}
		*dst = t
	}
}

// lifecycle decodes {freeze, settle: {after, top}, archive: {after}}; a
// step present (even empty, {}) is scheduled with its defaults.
func (d *decoder) lifecycle(dst **Lifecycle) field {
	return func(n *yaml.Node, key string) {
		lc := &Lifecycle{Freeze: FreezeAuto}
		d.fields(n, key, map[string]field{
			"freeze": d.str(&lc.Freeze),
			"settle": func(n *yaml.Node, key string) {
				st := &LifecycleStep{After: DefaultSettleAfter, Top: DefaultSettleTop}
				d.fields(n, key, map[string]field{"after": d.duration(&st.After), "top": intField(d, &st.Top)})
				lc.Settle = st
			},
			"archive": func(n *yaml.Node, key string) {
				st := &LifecycleStep{After: DefaultArchiveAfter}
				d.fields(n, key, map[string]field{"after": d.duration(&st.After)})
				lc.Archive = st
			},
		})
		*dst = lc
	}
}

func (d *decoder) location(dst **time.Location) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "a time zone name"); n == nil {
			return
		}
		switch loc, err := time.LoadLocation(n.Value); {
		case n.Value == "":
			d.fail(key, n, "must not be empty (omit it for UTC)")
		case strings.EqualFold(n.Value, "Local"):
			d.fail(key, n, "%q depends on the host; name a zone such as UTC or Asia/Shanghai", n.Value)
		case err != nil:
			d.fail(key, n, "unknown time zone %q", n.Value)
		default:
			*dst = loc
		}
	}
}

func (d *decoder) weekday(dst *time.Weekday) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "a weekday"); n == nil {
			return
		}
		wd, ok := weekdays[n.Value]
		if !ok {
			d.fail(key, n, "%q is not one of %s", n.Value, weekdayList)
			return
		}
		*dst = wd
	}
}

func (d *decoder) derivation(dst **Derivation) field {
	return func(n *yaml.Node, key string) {
		dv := &Derivation{Aggregate: AggregateSum}
		d.fields(n, key, map[string]field{
			"aggregate": d.str(&dv.Aggregate),
			"inputs": func(n *yaml.Node, key string) {
				items, ok := d.seq(n, key)
				if !ok {
					return
				}
				for i, it := range items {
					in := DerivedInput{Weight: 1}
					d.fields(it, fmt.Sprintf("%s[%d]", key, i), map[string]field{
						"family": d.str(&in.Family),
						"weight": intField(d, &in.Weight),
					})
					dv.Inputs = append(dv.Inputs, in)
				}
			},
		})
		*dst = dv
	}
}

// columns decodes [{name, order, max, aggregate}].
func (d *decoder) columns(dst *[]Column) field {
	return func(n *yaml.Node, key string) {
		items, ok := d.seq(n, key)
		if !ok {
			return
		}
		out := make([]Column, 0, len(items))
		for i, it := range items {
			c := Column{Order: OrderDesc}
			d.fields(it, fmt.Sprintf("%s[%d]", key, i), map[string]field{
				"name":      d.str(&c.Name),
				"order":     d.str(&c.Order),
				"max":       intField(d, &c.Max),
				"aggregate": d.str(&c.Aggregate),
			})
			out = append(out, c)
		}
		*dst = out
	}
}

func (d *decoder) dimensions(dst *map[string]Dimension) field {
	return func(n *yaml.Node, key string) {
		ps, ok := d.pairs(n, key)
		if !ok {
			return
		}
		dims := make(map[string]Dimension, len(ps))
		for _, p := range ps {
			dim := Dimension{Shards: 1}
			d.fields(p.v, join(key, p.key), map[string]field{"shards": intField(d, &dim.Shards)})
			dims[p.key] = dim
		}
		*dst = dims
	}
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

const weekdayList = "monday, tuesday, wednesday, thursday, friday, saturday, sunday"

// pair is one key of a mapping.
type pair struct {
	key  string
	k, v *yaml.Node
}

// pairs returns the keys of a mapping in document order, with merge keys
// (<<: *anchor) resolved: explicit keys win over merged ones, and earlier
// merged mappings over later ones. A null node is an empty mapping.
func (d *decoder) pairs(n *yaml.Node, path string) ([]pair, bool) {
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.fail(path, n, "expected a mapping, got %s", describe(n))
		return nil, false
	}
	var out, merged []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(path, k, "expected a scalar key, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			srcs := []*yaml.Node{v}
			if rv := resolve(v); rv.Kind == yaml.SequenceNode {
				srcs = rv.Content
			}
			for _, src := range srcs {
				ps, _ := d.pairs(src, path)
				merged = append(merged, ps...)
			}
			continue
		}
		if seen[k.Value] {
			d.fail(join(path, k.Value), k, "duplicate key")
			continue
		}
		seen[k.Value] = true
		out = append(out, pair{key: k.Value, k: k, v: v})
	}
	for _, p := range merged {
		if !seen[p.key] {
			seen[p.key] = true
			out = append(out, p)
		}
	}
	return out, true
}

// fields decodes a mapping whose keys are known in advance: an unknown key is
// an error. It returns the keys present with a non-null value.
func (d *decoder) fields(n *yaml.Node, path string, fs map[string]field) map[string]bool {
	ps, _ := d.pairs(n, path)
	set := make(map[string]bool, len(ps))
	for _, p := range ps {
		key := join(path, p.key)
		f, ok := fs[p.key]
		if !ok {
			d.errs = append(d.errs, &FieldError{Key: key, Msg: fmt.Sprintf("unknown key (line %d; known keys: %s)",
				p.k.Line, strings.Join(slices.Sorted(maps.Keys(fs)), ", "))})
			continue
		}
		if !isNull(resolve(p.v)) {
			set[p.key] = true
		}
		f(p.v, key)
	}
	return set
}

// seq returns the items of a sequence; a null node is an empty sequence.
func (d *decoder) seq(n *yaml.Node, key string) ([]*yaml.Node, bool) {
	n = resolve(n)
	if isNull(n) {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(key, n, "expected a list, got %s", describe(n))
		return nil, false
	}
	return n.Content, true
}

// scalar returns a non-null scalar node, or nil (null: keep the default).
func (d *decoder) scalar(n *yaml.Node, key, want string) *yaml.Node {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(key, n, "expected %s, got %s", want, describe(n))
		return nil
	}
	return n
}

func (d *decoder) str(dst *string) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "a string"); n != nil {
			*dst = n.Value
		}
	}
}

func (d *decoder) strs(dst *[]string) field {
	return func(n *yaml.Node, key string) {
		items, ok := d.seq(n, key)
		if !ok {
			return
		}
		out := make([]string, 0, len(items))
		for i, item := range items {
			if item = d.scalar(item, fmt.Sprintf("%s[%d]", key, i), "a string"); item != nil {
				out = append(out, item.Value)
			}
		}
		*dst = out
	}
}

func (d *decoder) bool(dst *bool) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "true or false"); n == nil {
			return
		}
		var v bool
		if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
			d.fail(key, n, "expected true or false, got %q", n.Value)
			return
		}
		*dst = v
	}
}

func intField[T int | int64](d *decoder, dst *T) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "an integer"); n == nil {
			return
		}
		var v T
		if n.ShortTag() != "!!int" {
			d.fail(key, n, "expected an integer, got %q", n.Value)
			return
		}
		if err := n.Decode(&v); err != nil {
			d.fail(key, n, "integer %s out of range", n.Value)
			return
		}
		*dst = v
	}
}

// float decodes a YAML integer or float; NaN and infinities are refused.
func (d *decoder) float(dst *float64) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "a number"); n == nil {
			return
		}
		var v float64
		if tag := n.ShortTag(); (tag != "!!int" && tag != "!!float") || n.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			d.fail(key, n, "expected a finite number, got %q", n.Value)
			return
		}
		*dst = v
	}
}

func (d *decoder) duration(dst *time.Duration) field {
	return func(n *yaml.Node, key string) {
		if n = d.scalar(n, key, "a duration"); n == nil {
			return
		}
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			d.fail(key, n, "invalid duration %q: want a Go duration such as 500ms, 5m or 1080h", n.Value)
			return
		}
		*dst = v
	}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	default:
		return "an unexpected node"
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

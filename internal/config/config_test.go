package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadExample(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Listen != "127.0.0.1:8080" || !c.ListenIsLoopback() {
		t.Errorf("listen = %q", c.Listen)
	}
	wantRedis := Redis{
		Addrs:                 []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"},
		Prefix:                "rk",
		DialTimeout:           2 * time.Second,
		ReadTimeout:           500 * time.Millisecond,
		WriteTimeout:          500 * time.Millisecond,
		ReplicaReads:          true,
		ClusterReloadInterval: time.Second,
		ReadTransport:         ReadTransportRueidis,
	}
	if !reflect.DeepEqual(c.Redis, wantRedis) {
		t.Errorf("redis = %+v, want %+v", c.Redis, wantRedis)
	}
	if c.Ledger.DSNEnv != "" || len(c.Auth.Tokens) != 0 {
		t.Errorf("ledger/auth = %+v %+v", c.Ledger, c.Auth)
	}
	if want := (Limits{MaxTop: 1000, MaxOffset: 10000, MaxRadius: 100, MaxBatch: 1000, MaxLookup: 1000}); c.Limits != want {
		t.Errorf("limits = %+v, want %+v", c.Limits, want)
	}
	if want := []string{"course", "game", "learning"}; !reflect.DeepEqual(c.FamilyNames, want) {
		t.Errorf("FamilyNames = %v, want %v", c.FamilyNames, want)
	}

	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want Family
	}{
		{
			name: "learning",
			want: Family{
				Name: "learning", KeyGroup: "learning", Source: SourceEvents, Aggregate: AggregateSum, Order: OrderDesc,
				Period: PeriodWeek, Location: shanghai, WeekStart: time.Monday,
				Grace: 5 * time.Minute, Retention: 1080 * time.Hour, CacheTTL: time.Second,
				Tie: TieFirst, Rank: RankCompetition, MaxPoints: 8388607, SeqCapacity: 1 << 30,
				RulesVersion: "2026.08", Index: FamilyIndex{MaxLag: 250 * time.Millisecond}, Live: FamilyLive{Interval: time.Second},
				Dimensions: map[string]Dimension{
					"national": {Shards: 16}, "province": {Shards: 1}, "class": {Shards: 1},
				},
				DimensionTypes: []string{"class", "province"},
			},
		},
		{
			name: "game",
			want: Family{
				Name: "game", KeyGroup: "game", Source: SourceEvents, Aggregate: AggregateMax, Order: OrderDesc,
				Period: PeriodAll, Location: time.UTC, WeekStart: time.Monday,
				Grace: 5 * time.Minute, Retention: 1080 * time.Hour, CacheTTL: 2 * time.Second,
				Tie: TieMember, Rank: RankOrdinal, MaxPoints: 1<<53 - 1,
				RulesVersion: "1", Index: FamilyIndex{MaxLag: 250 * time.Millisecond}, Live: FamilyLive{Interval: time.Second},
				Dimensions: map[string]Dimension{"national": {Shards: 8}},
			},
		},
		{
			name: "course",
			want: Family{
				Name: "course", KeyGroup: "course", Source: SourceProjection, Order: OrderDesc,
				Period: PeriodWeek, Location: time.UTC, WeekStart: time.Monday,
				Grace: 5 * time.Minute, Retention: 1080 * time.Hour, CacheTTL: time.Second,
				Tie: TieMember, Rank: RankCompetition, MaxPoints: 1<<53 - 1,
				RulesVersion: "1", Index: FamilyIndex{MaxLag: 250 * time.Millisecond}, Live: FamilyLive{Interval: time.Second},
				Dimensions: map[string]Dimension{"national": {Shards: 1}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := c.Family(tt.name)
			if !ok {
				t.Fatalf("family %q missing", tt.name)
			}
			got := *f
			if got.Location.String() != tt.want.Location.String() {
				t.Errorf("location = %v, want %v", got.Location, tt.want.Location)
			}
			got.Location, tt.want.Location = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("family =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}

	learning := c.Families["learning"]
	if !learning.TieFirst() || !learning.Competition() || !learning.Desc() || learning.Projection() {
		t.Errorf("learning helpers wrong: %+v", learning)
	}
	if n, ok := learning.Shards("national"); !ok || n != 16 {
		t.Errorf("Shards(national) = %d, %v", n, ok)
	}
	if _, ok := learning.Shards("city"); ok {
		t.Errorf("Shards(city) reported present")
	}
	if !c.Families["course"].Projection() {
		t.Errorf("course is not a projection family")
	}
}

func TestLoadDevConfig(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "deploy", "rankgate.dev.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	wantAddrs := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"}
	if c.Listen != "127.0.0.1:8080" || c.Redis.Prefix != "rk" || !reflect.DeepEqual(c.Redis.Addrs, wantAddrs) {
		t.Errorf("listen/prefix/addrs = %q %q %v", c.Listen, c.Redis.Prefix, c.Redis.Addrs)
	}
	tests := []struct {
		family, period, tz, tie, rank, source, aggregate string
		dims                                             map[string]Dimension
	}{
		{"learning", PeriodWeek, "Asia/Shanghai", TieFirst, RankCompetition, SourceEvents, AggregateSum,
			map[string]Dimension{"national": {16}, "province": {1}, "class": {1}}},
		{"game", PeriodAll, "UTC", TieMember, RankOrdinal, SourceEvents, AggregateMax,
			map[string]Dimension{"national": {8}}},
		{"course", PeriodWeek, "UTC", TieMember, RankCompetition, SourceProjection, "",
			map[string]Dimension{"national": {1}}},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			f, ok := c.Family(tt.family)
			if !ok {
				t.Fatalf("family %q missing", tt.family)
			}
			if f.Period != tt.period || f.Location.String() != tt.tz || f.Tie != tt.tie || f.Rank != tt.rank ||
				f.Source != tt.source || f.Aggregate != tt.aggregate || !reflect.DeepEqual(f.Dimensions, tt.dims) {
				t.Errorf("family = %+v", f)
			}
		})
	}
}

func TestLedgerCommitKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml string
		want       Ledger
	}{
		{"defaults", "", Ledger{CommitLinger: 2 * time.Millisecond, CommitMaxEvents: 500}},
		{"set", "ledger:\n  dsn_env: PG\n  commit_linger: 0s\n  commit_max_events: 64\n", Ledger{DSNEnv: "PG", CommitMaxEvents: 64}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.yaml + "families:\n  f:\n    dimensions:\n      national: {}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Ledger != c.want {
				t.Errorf("ledger = %+v, want %+v", cfg.Ledger, c.want)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte("families:\n  f:\n    dimensions:\n      national: {}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Default()
	want.Families = nil
	got := *c
	got.Families, got.FamilyNames = nil, nil
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("config = %+v, want %+v", got, *want)
	}
	f := c.Families["f"]
	wantF := defaultFamily("f")
	wantF.KeyGroup = "f"
	wantF.Aggregate = AggregateSum
	wantF.MaxPoints = MaxPointsLimit
	wantF.Dimensions = map[string]Dimension{"national": {Shards: 1}}
	if !reflect.DeepEqual(f, wantF) {
		t.Errorf("family = %+v, want %+v", f, wantF)
	}
}

func TestParseFamilyDefaults(t *testing.T) {
	tests := []struct {
		name                  string
		family                string
		maxPoints, seqCap     int64
		aggregate             string
		wantTie, wantLocation string
	}{
		{"tie first fills both bounds", "tie: first", DefaultTieFirstMaxPoints, DefaultSeqCapacity, AggregateSum, TieFirst, "UTC"},
		{"tie first keeps set seq_capacity", "tie: first\nseq_capacity: 1024", DefaultTieFirstMaxPoints, 1024, AggregateSum, TieFirst, "UTC"},
		{"tie first keeps set max_points", "tie: first\nmax_points: 1000", 1000, DefaultSeqCapacity, AggregateSum, TieFirst, "UTC"},
		{"tie member", "tie: member", MaxPointsLimit, 0, AggregateSum, TieMember, "UTC"},
		{"null values keep defaults", "tie:\ntimezone:\naggregate:", MaxPointsLimit, 0, AggregateSum, TieMember, "UTC"},
		{"projection has no aggregate", "source: projection", MaxPointsLimit, 0, "", TieMember, "UTC"},
		{"aggregate min", "aggregate: min\norder: asc", MaxPointsLimit, 0, AggregateMin, TieMember, "UTC"},
		{"timezone", "timezone: America/New_York", MaxPointsLimit, 0, AggregateSum, TieMember, "America/New_York"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(withFamily(tt.family)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			f := c.Families["f"]
			if f.MaxPoints != tt.maxPoints || f.SeqCapacity != tt.seqCap || f.Aggregate != tt.aggregate ||
				f.Tie != tt.wantTie || f.Location.String() != tt.wantLocation {
				t.Errorf("got max_points %d seq_capacity %d aggregate %q tie %q tz %v", f.MaxPoints, f.SeqCapacity, f.Aggregate, f.Tie, f.Location)
			}
		})
	}
}

func TestParseYAMLFeatures(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(*testing.T, *Config)
	}{
		{
			name: "anchors and merge keys",
			yaml: `
families:
  a: &base
    period: day
    tie: first
    dimensions: {national: {shards: 4}}
  b:
    <<: *base
    period: month
`,
			check: func(t *testing.T, c *Config) {
				a, b := c.Families["a"], c.Families["b"]
				if a.Period != PeriodDay || b.Period != PeriodMonth || b.Tie != TieFirst || b.Dimensions["national"].Shards != 4 {
					t.Errorf("a = %+v, b = %+v", a, b)
				}
			},
		},
		{
			name: "quoted and unquoted strings",
			yaml: withFamily("rules_version: 2026.08\ntimezone: \"UTC\""),
			check: func(t *testing.T, c *Config) {
				if v := c.Families["f"].RulesVersion; v != "2026.08" {
					t.Errorf("rules_version = %q", v)
				}
			},
		},
		{
			name: "zero cache_ttl and grace",
			yaml: withFamily("cache_ttl: 0\ngrace: 0s"),
			check: func(t *testing.T, c *Config) {
				if f := c.Families["f"]; f.CacheTTL != 0 || f.Grace != 0 {
					t.Errorf("cache_ttl %v grace %v", f.CacheTTL, f.Grace)
				}
			},
		},
		{
			name: "tokens",
			yaml: "listen: 0.0.0.0:8080\nauth:\n  tokens:\n    - {token_env: RK_ADMIN, scopes: [read, write, admin]}\n    - {token_env: RK_READ, scopes: [read]}\n" + withFamily(""),
			check: func(t *testing.T, c *Config) {
				want := []Token{{TokenEnv: "RK_ADMIN", Scopes: []string{"read", "write", "admin"}}, {TokenEnv: "RK_READ", Scopes: []string{"read"}}}
				if !reflect.DeepEqual(c.Auth.Tokens, want) {
					t.Errorf("tokens = %+v", c.Auth.Tokens)
				}
				if !c.Auth.Tokens[0].Allows(ScopeAdmin) || c.Auth.Tokens[1].Allows(ScopeWrite) {
					t.Errorf("Allows wrong")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantListen string
		wantAddrs  []string
		wantPrefix string
	}{
		{"nothing set", nil, "127.0.0.1:8080", []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, "rk"},
		{"blank ignored", map[string]string{EnvListen: " ", EnvRedisAddrs: "", EnvRedisPrefix: ""},
			"127.0.0.1:8080", []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, "rk"},
		{"all set", map[string]string{EnvListen: "127.0.0.1:9090", EnvRedisAddrs: " 10.0.0.1:6379, ,10.0.0.2:6379,", EnvRedisPrefix: "lb"},
			"127.0.0.1:9090", []string{"10.0.0.1:6379", "10.0.0.2:6379"}, "lb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.ApplyEnv(func(k string) string { return tt.env[k] })
			if c.Listen != tt.wantListen || !reflect.DeepEqual(c.Redis.Addrs, tt.wantAddrs) || c.Redis.Prefix != tt.wantPrefix {
				t.Errorf("got %q %v %q", c.Listen, c.Redis.Addrs, c.Redis.Prefix)
			}
		})
	}
}

func TestApplyEnvThenValidate(t *testing.T) {
	c, err := Parse([]byte(withFamily("")))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyEnv(func(k string) string {
		return map[string]string{EnvListen: ":8080", EnvRedisPrefix: "Bad-Prefix"}[k]
	})
	err = c.Validate()
	for _, key := range []string{"auth.tokens", "redis.prefix"} {
		if !hasKey(err, key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}

func TestListenIsLoopback(t *testing.T) {
	tests := []struct {
		name   string
		listen string
		want   bool
	}{
		{"ipv4 loopback", "127.0.0.1:8080", true},
		{"other 127/8", "127.1.2.3:80", true},
		{"localhost", "localhost:8080", true},
		{"ipv6 loopback", "[::1]:8080", true},
		{"all interfaces", ":8080", false},
		{"unspecified", "0.0.0.0:8080", false},
		{"public", "10.0.0.5:8080", false},
		{"hostname", "example.com:8080", false},
		{"garbage", "nonsense", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{Listen: tt.listen}
			if got := c.ListenIsLoopback(); got != tt.want {
				t.Errorf("ListenIsLoopback(%q) = %v, want %v", tt.listen, got, tt.want)
			}
		})
	}
}

func TestSecretsFromEnv(t *testing.T) {
	env := map[string]string{"RK_PW": "s3cret", "RK_DSN": "postgres://x", "RK_TOKEN": "tok"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"password set", Redis{PasswordEnv: "RK_PW"}.Password(getenv), "s3cret"},
		{"password none", Redis{}.Password(getenv), ""},
		{"password env unset", Redis{PasswordEnv: "RK_MISSING"}.Password(getenv), ""},
		{"dsn", Ledger{DSNEnv: "RK_DSN"}.DSN(getenv), "postgres://x"},
		{"dsn none", Ledger{}.DSN(getenv), ""},
		{"token", Token{TokenEnv: "RK_TOKEN"}.Value(getenv), "tok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	t.Run("nil getenv uses os.Getenv", func(t *testing.T) {
		t.Setenv("RK_TEST_PW", "fromenv")
		if got := (Redis{PasswordEnv: "RK_TEST_PW"}).Password(nil); got != "fromenv" {
			t.Errorf("got %q", got)
		}
	})
}

func TestValidateHandBuilt(t *testing.T) {
	c := Default()
	f := defaultFamily("")
	f.Aggregate = AggregateSum
	f.MaxPoints = 100
	f.Dimensions = map[string]Dimension{"national": {2}, "team": {1}, "city": {3}}
	c.Families["hand"] = f
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if f.Name != "hand" || !reflect.DeepEqual(f.DimensionTypes, []string{"city", "team"}) || !reflect.DeepEqual(c.FamilyNames, []string{"hand"}) {
		t.Errorf("derived fields: name %q types %v names %v", f.Name, f.DimensionTypes, c.FamilyNames)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want not exist", err)
	}
}

func TestLoadNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("listne: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "listne: unknown key") {
		t.Errorf("err = %v", err)
	}
}

// withFamily returns a valid config with one family "f" whose body is the
// given lines (plus a national dimension unless the body sets dimensions).
func withFamily(body string) string {
	var b strings.Builder
	b.WriteString("redis:\n  addrs: [\"127.0.0.1:7000\"]\nfamilies:\n  f:\n")
	if !strings.Contains(body, "dimensions") {
		body += "\ndimensions:\n  national: {shards: 1}"
	}
	for _, line := range strings.Split(strings.TrimLeft(body, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// hasKey reports whether err holds a *FieldError for key.
func hasKey(err error, key string) bool {
	for _, fe := range fieldErrors(err) {
		if fe.Key == key {
			return true
		}
	}
	return false
}

func fieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if fe, ok := e.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		} else if u := errors.Unwrap(e); u != nil {
			walk(u)
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

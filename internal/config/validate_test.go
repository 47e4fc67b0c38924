package config

import (
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		key  string // the *FieldError key expected
		msg  string // a substring of the whole error
	}{
		{"unknown top-level key", "listne: 127.0.0.1:8080\n" + withFamily(""), "listne", "listne: unknown key"},
		{"unknown redis key", "redis:\n  adrs: [a:1]\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.adrs", "unknown key"},
		{"unknown nested key", withFamily("dimensions:\n  national: {shardz: 4}"),
			"families.f.dimensions.national.shardz", "families.f.dimensions.national.shardz: unknown key"},
		{"unknown family key", withFamily("tie_break: first"), "families.f.tie_break", "unknown key"},
		{"unknown token key", "auth:\n  tokens: [{token_env: T, scope: [read]}]\n" + withFamily(""), "auth.tokens[0].scope", "unknown key"},
		{"duplicate key", withFamily("tie: first\ntie: member"), "families.f.tie", "duplicate key"},
		{"shards 0", withFamily("dimensions:\n  national: {shards: 0}"), "families.f.dimensions.national.shards", "out of range 1..1024"},
		{"shards 1025", withFamily("dimensions:\n  national: {shards: 1025}"), "families.f.dimensions.national.shards", "out of range 1..1024"},
		{"shards not an integer", withFamily("dimensions:\n  national: {shards: many}"), "families.f.dimensions.national.shards", "expected an integer"},
		{"bad timezone", withFamily("timezone: Mars/Olympus"), "families.f.timezone", "unknown time zone"},
		{"local timezone", withFamily("timezone: Local"), "families.f.timezone", "depends on the host"},
		{"bad week_start", withFamily("week_start: caturday"), "families.f.week_start", "is not one of monday"},
		{"tie first overflow", withFamily("tie: first\nmax_points: 8388608\nseq_capacity: 1073741824"),
			"families.f.seq_capacity", "max_points (8388608) × seq_capacity (1073741824) leaves ±2^53"},
		{"tie first default B overflow", withFamily("tie: first\nmax_points: 8388608"), "families.f.seq_capacity", "leaves ±2^53"},
		{"seq_capacity with tie member", withFamily("tie: member\nseq_capacity: 1024"), "families.f.seq_capacity", "only used with tie: first"},
		{"seq_capacity 1", withFamily("tie: first\nseq_capacity: 1"), "families.f.seq_capacity", "must be ≥ 2"},
		{"max_points 0", withFamily("max_points: 0"), "families.f.max_points", "out of range"},
		{"max_points 2^53", withFamily("max_points: 9007199254740992"), "families.f.max_points", "out of range"},
		{"max_points beyond int64", withFamily("max_points: 99999999999999999999"), "families.f.max_points", "expected an integer"},
		{"bad source", withFamily("source: stream"), "families.f.source", `"stream" is not one of events, projection`},
		{"bad aggregate", withFamily("aggregate: avg"), "families.f.aggregate", "is not one of sum, max, min"},
		{"aggregate on projection", withFamily("source: projection\naggregate: sum"), "families.f.aggregate", "only used with source: events"},
		{"bad order", withFamily("order: up"), "families.f.order", "is not one of desc, asc"},
		{"bad period", withFamily("period: year"), "families.f.period", "is not one of hour, day, week, month, all, seasons, cron"},
		{"seasons without a list", withFamily("period: seasons"), "families.f.seasons", "at least one season"},
		{"seasons overlapping", withFamily("period: seasons\nseasons:\n  - {id: s1, starts: \"2026-12-01T00:00:00Z\", ends: \"2026-12-15T00:00:00Z\"}\n  - {id: s2, starts: \"2026-12-14T00:00:00Z\", ends: \"2026-12-20T00:00:00Z\"}"),
			"families.f.seasons", "must not overlap"},
		{"season time without offset", withFamily("period: seasons\nseasons:\n  - {id: s1, starts: \"2026-12-01T00:00:00\", ends: \"2026-12-15T00:00:00Z\"}"),
			"families.f.seasons[0].starts", "want RFC 3339 with an offset"},
		{"season bad id", withFamily("period: seasons\nseasons:\n  - {id: \"s:1\", starts: \"2026-12-01T00:00:00Z\", ends: \"2026-12-15T00:00:00Z\"}"),
			"families.f.seasons", "must match"},
		{"season unknown key", withFamily("period: seasons\nseasons:\n  - {id: s1, start: \"2026-12-01T00:00:00Z\"}"), "families.f.seasons[0].start", "unknown key"},
		{"seasons with period week", withFamily("period: week\nseasons:\n  - {id: s1, starts: \"2026-12-01T00:00:00Z\", ends: \"2026-12-15T00:00:00Z\"}"),
			"families.f.seasons", "only used with period: seasons"},
		{"cron without reset", withFamily("period: cron"), "families.f.reset", "is required with period: cron"},
		{"cron bad reset", withFamily("period: cron\nreset: \"0 4 * *\""), "families.f.reset", "cron expression"},
		{"cron that never fires", withFamily("period: cron\nreset: \"0 0 30 2 *\""), "families.f.reset", "never fires"},
		{"reset with period day", withFamily("period: day\nreset: \"0 4 * * 1\""), "families.f.reset", "only used with period: cron"},
		{"index max_boards 0", "index:\n  max_boards: 0\n" + withFamily(""), "index.max_boards", "out of range 1..100000"},
		{"index max_members 0", "index:\n  max_members: 0\n" + withFamily(""), "index.max_members", "out of range 1..1000000000"},
		{"index feed_len 10", "index:\n  feed_len: 10\n" + withFamily(""), "index.feed_len", "out of range 1000..10000000"},
		{"audit max_entries 10", "audit:\n  max_entries: 10\n" + withFamily(""), "audit.max_entries", "out of range 1000..100000000"},
		{"audit secret env not a name", "audit:\n  hmac_secret_env: \"a b\"\n" + withFamily(""), "audit.hmac_secret_env", "not an environment variable name"},
		{"index idle_after 10ms", "index:\n  idle_after: 10ms\n" + withFamily(""), "index.idle_after", "must be ≥ 1s"},
		{"index poll_interval 0", "index:\n  poll_interval: 0s\n" + withFamily(""), "index.poll_interval", "out of range 1ms..1s"},
		{"index poll_idle below poll_interval", "index:\n  poll_interval: 50ms\n  poll_idle: 10ms\n" + withFamily(""), "index.poll_idle", "out of range poll_interval"},
		{"index unknown key", "index:\n  max_board: 3\n" + withFamily(""), "index.max_board", "unknown key"},
		{"family index max_lag 0", withFamily("index: {enabled: true, max_lag: 0s}"), "families.f.index.max_lag", "out of range (0, 1m0s]"},
		{"family index max_lag 2m", withFamily("index: {enabled: true, max_lag: 2m}"), "families.f.index.max_lag", "out of range (0, 1m0s]"},
		{"family index not a bool", withFamily("index: {enabled: sometimes}"), "families.f.index.enabled", "expected true or false"},
		{"family index unknown key", withFamily("index: {enable: true}"), "families.f.index.enable", "unknown key"},
		{"live max_subscribers 0", "live:\n  max_subscribers: 0\n" + withFamily(""), "live.max_subscribers", "out of range 1..1000000"},
		{"live max_per_token over max_subscribers", "live:\n  max_subscribers: 10\n  max_per_token: 11\n" + withFamily(""), "live.max_per_token", "out of range 1..10"},
		{"live max_per_token 0", "live:\n  max_per_token: 0\n" + withFamily(""), "live.max_per_token", "out of range 1..20000"},
		{"live heartbeat 10ms", "live:\n  heartbeat: 10ms\n" + withFamily(""), "live.heartbeat", "out of range 1s..5m"},
		{"live write_timeout 1ms", "live:\n  write_timeout: 1ms\n" + withFamily(""), "live.write_timeout", "out of range 100ms..1m"},
		{"live max_behind 1h", "live:\n  max_behind: 1h\n" + withFamily(""), "live.max_behind", "out of range 1s..10m"},
		{"live unknown key", "live:\n  heartbeats: 1s\n" + withFamily(""), "live.heartbeats", "unknown key"},
		{"family live interval 10ms", withFamily("live: {interval: 10ms}"), "families.f.live.interval", "out of range 100ms..1m0s"},
		{"family live interval 2m", withFamily("live: {interval: 2m}"), "families.f.live.interval", "out of range 100ms..1m0s"},
		{"family live unknown key", withFamily("live: {every: 1s}"), "families.f.live.every", "unknown key"},
		{"five columns", withFamily("columns:\n  - {name: a, max: 1}\n  - {name: b, max: 1}\n  - {name: c, max: 1}\n  - {name: d, max: 1}\n  - {name: e, max: 1}"),
			"families.f.columns", "at most 4 columns"},
		{"column twice", withFamily("columns:\n  - {name: a, max: 1}\n  - {name: a, max: 2}"), "families.f.columns[1].name", "declared twice"},
		{"column bad name", withFamily("columns:\n  - {name: Time, max: 1}"), "families.f.columns[0].name", "must match"},
		{"column max 0", withFamily("columns:\n  - {name: a, max: 0}"), "families.f.columns[0].max", "out of range"},
		{"column max 2^53", withFamily("columns:\n  - {name: a, max: 9007199254740992}"), "families.f.columns[0].max", "out of range"},
		{"column bad order", withFamily("columns:\n  - {name: a, max: 9, order: up}"), "families.f.columns[0].order", "is not one of asc, desc"},
		{"column bad aggregate", withFamily("columns:\n  - {name: a, max: 9, aggregate: avg}"), "families.f.columns[0].aggregate", "is not one of sum, last, max, min"},
		{"column aggregate in a max family", withFamily("aggregate: max\ncolumns:\n  - {name: a, max: 9, aggregate: sum}"),
			"families.f.columns[0].aggregate", "only used in sum families"},
		{"column unknown key", withFamily("columns:\n  - {name: a, max: 9, min: 0}"), "families.f.columns[0].min", "unknown key"},
		{"bad tie", withFamily("tie: random"), "families.f.tie", "is not one of member, first"},
		{"bad rank", withFamily("rank: dense"), "families.f.rank", "is not one of ordinal, competition"},
		{"bad duration", withFamily("grace: 5 minutes"), "families.f.grace", `invalid duration "5 minutes"`},
		{"duration without unit", withFamily("cache_ttl: 5"), "families.f.cache_ttl", "invalid duration"},
		{"negative grace", withFamily("grace: -1m"), "families.f.grace", "must be ≥ 0"},
		{"zero retention", withFamily("retention: 0s"), "families.f.retention", "must be > 0"},
		{"negative cache_ttl", withFamily("cache_ttl: -1s"), "families.f.cache_ttl", "must be ≥ 0"},
		{"cache_shared without a cache", withFamily("cache_ttl: 0\ncache_shared: true"), "families.f.cache_shared", "needs a cache"},
		{"empty rules_version", withFamily(`rules_version: ""`), "families.f.rules_version", "printable"},
		{"missing national", withFamily("dimensions:\n  province: {shards: 1}"), "families.f.dimensions.national", "is required"},
		{"no dimensions", withFamily("dimensions: {}"), "families.f.dimensions.national", "is required"},
		{"bad dimension type", withFamily("dimensions:\n  national: {}\n  Province: {}"), "families.f.dimensions.Province", "invalid dimension type"},
		{"dimensions not a mapping", withFamily("dimensions: [national]"), "families.f.dimensions", "expected a mapping"},
		{"bad family name", strings.Replace(withFamily(""), "  f:\n", "  Learning!:\n", 1), "families.Learning!", "invalid family name"},
		{"family name too long", strings.Replace(withFamily(""), "  f:\n", "  "+strings.Repeat("a", 33)+":\n", 1), "families." + strings.Repeat("a", 33), "invalid family name"},
		{"no families", "redis:\n  addrs: [\"127.0.0.1:7000\"]\n", "families", "at least one family"},
		{"families is a list", "families: [learning]\n", "families", "expected a mapping"},
		{"empty addrs", strings.Replace(withFamily(""), `["127.0.0.1:7000"]`, "[]", 1), "redis.addrs", "at least one address"},
		{"addr without port", strings.Replace(withFamily(""), `"127.0.0.1:7000"`, `"127.0.0.1"`, 1), "redis.addrs[0]", "not host:port"},
		{"addr without host", strings.Replace(withFamily(""), `"127.0.0.1:7000"`, `":7000"`, 1), "redis.addrs[0]", "no host"},
		{"addr bad port", strings.Replace(withFamily(""), `"127.0.0.1:7000"`, `"127.0.0.1:99999"`, 1), "redis.addrs[0]", "invalid port"},
		{"duplicate addr", strings.Replace(withFamily(""), `"127.0.0.1:7000"`, `"127.0.0.1:7000", "127.0.0.1:7000"`, 1), "redis.addrs[1]", "duplicate"},
		{"addrs not a list", strings.Replace(withFamily(""), `["127.0.0.1:7000"]`, "127.0.0.1:7000", 1), "redis.addrs", "expected a list"},
		{"bad prefix", "redis:\n  prefix: RK{x}\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.prefix", "[a-z0-9_]{1,16}"},
		{"prefix too long", "redis:\n  prefix: abcdefghijklmnopq\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.prefix", "[a-z0-9_]{1,16}"},
		{"zero timeout", "redis:\n  read_timeout: 0s\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.read_timeout", "must be > 0"},
		{"wait_replicas 6", "redis:\n  wait_replicas: 6\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.wait_replicas", "out of range 0..5"},
		{"commit_linger too long", "ledger:\n  commit_linger: 1s\n" + withFamily(""), "ledger.commit_linger", "out of range 0..100ms"},
		{"commit_linger negative", "ledger:\n  commit_linger: -1ms\n" + withFamily(""), "ledger.commit_linger", "out of range"},
		{"commit_max_events 0", "ledger:\n  commit_max_events: 0\n" + withFamily(""), "ledger.commit_max_events", "out of range 1..10000"},
		{"slow cluster reload", "redis:\n  cluster_reload_interval: 60s\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.cluster_reload_interval", "out of range"},
		{"tls not bool", "redis:\n  tls: maybe\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.tls", "expected true or false"},
		{"bad password_env", "redis:\n  password_env: my-password\n" + strings.TrimPrefix(withFamily(""), "redis:\n  addrs: [\"127.0.0.1:7000\"]\n"), "redis.password_env", "not an environment variable name"},
		{"bad listen", "listen: 8080\n" + withFamily(""), "listen", "not host:port"},
		{"open on public address", "listen: 0.0.0.0:8080\n" + withFamily(""), "auth.tokens", "not loopback-only"},
		{"token without env", "auth:\n  tokens: [{scopes: [read]}]\n" + withFamily(""), "auth.tokens[0].token_env", "is required"},
		{"token without scopes", "auth:\n  tokens: [{token_env: T}]\n" + withFamily(""), "auth.tokens[0].scopes", "at least one"},
		{"token bad scope", "auth:\n  tokens: [{token_env: T, scopes: [read, root]}]\n" + withFamily(""), "auth.tokens[0].scopes[1]", `"root" is not one of read, write, admin`},
		{"token duplicate env", "auth:\n  tokens: [{token_env: T, scopes: [read]}, {token_env: T, scopes: [write]}]\n" + withFamily(""), "auth.tokens[1].token_env", "duplicate"},
		{"max_top 0", "limits:\n  max_top: 0\n" + withFamily(""), "limits.max_top", "out of range 1..10000"},
		{"max_offset too deep", "limits:\n  max_offset: 1000001\n" + withFamily(""), "limits.max_offset", "out of range 1..1000000"},
		{"max_radius too wide", "limits:\n  max_radius: 1001\n" + withFamily(""), "limits.max_radius", "out of range"},
		{"max_batch too big", "limits:\n  max_batch: 10001\n" + withFamily(""), "limits.max_batch", "out of range"},
		{"max_lookup negative", "limits:\n  max_lookup: -1\n" + withFamily(""), "limits.max_lookup", "out of range"},
		{"root not a mapping", "- a\n- b\n", "", "expected a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error naming %q", tt.key)
			}
			if !hasKey(err, tt.key) {
				t.Errorf("error does not name key %q:\n%v", tt.key, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error does not contain %q:\n%v", tt.msg, err)
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		msg  string
	}{
		{"malformed YAML", "families: [\n", "invalid YAML"},
		{"two documents", withFamily("") + "---\nlisten: x\n", "more than one document"},
		{"tab indentation", "redis:\n\taddrs: []\n", "invalid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want it to contain %q", err, tt.msg)
			}
		})
	}
}

func TestParseReportsAllErrors(t *testing.T) {
	_, err := Parse([]byte(withFamily("tie: random\nrank: dense\ndimensions:\n  national: {shards: 0}")))
	for _, key := range []string{"families.f.tie", "families.f.rank", "families.f.dimensions.national.shards"} {
		if !hasKey(err, key) {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
}

func TestTieFirstScoreBound(t *testing.T) {
	tests := []struct {
		name      string
		maxPoints int64
		seqCap    int64
		ok        bool
	}{
		{"default exactly 2^53", 8388607, 1 << 30, true},
		{"one point too many", 8388608, 1 << 30, false},
		{"one seq too many", 8388607, 1<<30 + 1, false},
		{"non power of two fits", 999, 9007199254740, true},
		{"non power of two overflows", 999, 9007199254741, false},
		{"largest B", 1, 1 << 52, true},
		{"B 2^52 + 1", 1, 1<<52 + 1, false},
		{"largest max_points", 1<<52 - 1, 2, true},
		{"max_points 2^52 needs B < 2", 1 << 52, 2, false},
		{"both huge, no overflow", MaxPointsLimit, 1<<62 + 12345, false},
		{"int64 max B", 1, 1<<63 - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			f := defaultFamily("f")
			f.Aggregate = AggregateSum
			f.Tie = TieFirst
			f.MaxPoints, f.SeqCapacity = tt.maxPoints, tt.seqCap
			f.Dimensions = map[string]Dimension{"national": {Shards: 1}}
			c.Families["f"] = f
			err := c.Validate()
			if got := err == nil; got != tt.ok {
				t.Fatalf("Validate ok = %v, want %v (err: %v)", got, tt.ok, err)
			}
			if !tt.ok && !hasKey(err, "families.f.seq_capacity") {
				t.Errorf("error does not name families.f.seq_capacity: %v", err)
			}
			if tt.ok {
				// The extreme score must be exact in a float64.
				top := tt.maxPoints*tt.seqCap + tt.seqCap - 1
				if top >= ScoreLimit {
					t.Errorf("top score %d not exact", top)
				}
			}
		})
	}
}

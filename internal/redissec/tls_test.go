package redissec

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/monitor"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

const (
	testPrefix  = "rksec"
	otherPrefix = "rkother" // outside the ACL's key pattern
	gwUser      = "rankgate"
	minUser     = "rankgate_min" // Commands without OptionalCommands
	passEnv     = "RANKGATE_TEST_REDIS_PASSWORD"
)

const configTemplate = `listen: "127.0.0.1:0"
redis:
  addrs: [%s]
  prefix: %q
  username: %q
  password_env: %s
  tls: true
%s  dial_timeout: 2s
  read_timeout: 2s
  write_timeout: 2s
  cluster_reload_interval: 1s
families:
  learning:
    source: events
    aggregate: sum
    period: week
    tie: first
    rank: competition
    cache_ttl: 0s
    dimensions:
      national: {shards: 4}
      province: {shards: 1}
  course:
    source: projection
    period: all
    dimensions:
      national: {shards: 2}
  hot:
    source: events
    period: all
    cache_ttl: 1s
    cache_shared: true
    dimensions:
      national: {shards: 2}
  base:
    period: week
    key_group: season
    max_points: 1000
    cache_ttl: 0s
    dimensions:
      national: {shards: 2}
  bonus:
    period: week
    key_group: season
    max_points: 1000
    cache_ttl: 0s
    dimensions:
      national: {shards: 2}
  final:
    source: derived
    period: week
    key_group: season
    max_points: 3000
    cache_ttl: 0s
    derived_from:
      inputs:
        - {family: base}
        - {family: bonus, weight: 2}
    dimensions:
      national: {shards: 2}
`

// tlsKeys renders the redis.tls_* lines.
func tlsKeys(ca, cert, key string) string {
	var b strings.Builder
	for _, kv := range [][2]string{{"tls_ca_file", ca}, {"tls_cert_file", cert}, {"tls_key_file", key}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "  %s: %q\n", kv[0], kv[1])
		}
	}
	return b.String()
}

func parseConfig(t testing.TB, addrs []string, prefix, user, tls string) *config.Config {
	t.Helper()
	quoted := make([]string, len(addrs))
	for i, a := range addrs {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, configTemplate, strings.Join(quoted, ", "), prefix, user, passEnv, tls))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// newClient builds a client from config as cmd/gateway does (redisClient):
// username, the password from password_env through getenv, TLS from the
// redis.tls_* keys.
func newClient(t testing.TB, cfg *config.Config, getenv func(string) string, readOnly bool) redis.UniversalClient {
	t.Helper()
	c, err := clientFor(t, cfg, getenv, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clientFor is newClient that returns the error: with a single address,
// store.NewClient already talks to the node (to learn whether it is a
// cluster node), so a refused login or certificate shows there.
func clientFor(t testing.TB, cfg *config.Config, getenv func(string) string, readOnly bool) (redis.UniversalClient, error) {
	t.Helper()
	tc, err := cfg.Redis.TLSConfig()
	if err != nil {
		t.Fatalf("tls config: %v", err)
	}
	c, err := store.NewClient(store.ClientOptions{
		Addrs: cfg.Redis.Addrs, Username: cfg.Redis.Username, Password: cfg.Redis.Password(getenv),
		TLS: tc, DialTimeout: cfg.Redis.DialTimeout, ReadTimeout: cfg.Redis.ReadTimeout,
		WriteTimeout: cfg.Redis.WriteTimeout, ReloadInterval: cfg.Redis.ClusterReloadInterval,
		ReadOnly: readOnly,
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, nil
}

func secret(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestGatewayOverTLSWithACLUser runs the gateway over TLS (mutual TLS, a CA
// the test made) as an ACL user limited to Commands and the key prefix,
// against a TLS-only 3-master + 3-replica cluster: every operation succeeds
// and no command is denied (ACL LOG stays empty); a key outside the prefix,
// a command outside the list, a wrong password, plain TCP, a server
// certificate from another CA and a missing client certificate all fail.
func TestGatewayOverTLSWithACLUser(t *testing.T) {
	requireRedis(t)
	start := time.Now()
	dir := t.TempDir()
	pki, err := NewPKI(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := NewPKI(dir, "rogue")
	if err != nil {
		t.Fatal(err)
	}
	cl := startTLSCluster(t, pki, secret(t))
	t.Logf("TLS cluster %v up in %s", cl.addrs, time.Since(start).Round(time.Millisecond))

	password := secret(t)
	cmds := Commands
	if cl.atLeast(t, 7, 2) {
		cmds = append(slices.Clone(Commands), Redis72Commands...)
	}
	cl.setUserCLI(t, gwUser, password, testPrefix, cmds)
	cl.setUser(t, minUser, password, testPrefix, Without(cmds, OptionalCommands...))
	t.Setenv(passEnv, password)
	getenv := os.Getenv

	goodTLS := tlsKeys(pki.CAFile, pki.ClientCert, pki.ClientKey)
	cfg := parseConfig(t, cl.addrs, testPrefix, gwUser, goodTLS)
	sk := newStack(t, cl, cfg, getenv)
	rw, st := sk.rw, sk.st

	t.Run("everything works as the restricted user", func(t *testing.T) {
		if tr := cfg.Redis.ReadTransport; tr != store.TransportRueidis {
			t.Fatalf("read transport %q: the default must be %s", tr, store.TransportRueidis)
		}
		before := sk.directReads(t, store.TransportRueidis)
		sk.exercise(t)
		// The reads of one master went through rueidis, over TLS as the user.
		if n := sk.directReads(t, store.TransportRueidis) - before; n < 10 {
			t.Errorf("%v reads through rueidis in the exercise: the rueidis transport was not used", n)
		}
		// Nothing was refused, not even what go-redis shrugs off.
		if denied := cl.denials(t); len(denied) > 0 {
			t.Errorf("ACL LOG has denials, so Commands misses something:\n%s", strings.Join(denied, "\n"))
		}
	})

	if os.Getenv(envAblate) == "1" {
		t.Run("every granted command is needed", func(t *testing.T) { ablate(t, cl, cfg, cmds) })
	}

	t.Run("a key outside the prefix is refused: NOPERM, 503", func(t *testing.T) {
		ctx := ctxT(t, 10*time.Second)
		err := rw.Do(ctx, "ZCARD", otherPrefix+":{x}:z").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("ZCARD outside the prefix: err = %v, want NOPERM", err)
		}
		other := parseConfig(t, cl.addrs, otherPrefix, gwUser, goodTLS)
		osvc, err := gateway.New(gateway.Options{Config: other, Backend: st})
		if err != nil {
			t.Fatal(err)
		}
		_, err = osvc.ApplyEvent(ctx, gateway.Event{EventID: "x1", Family: "learning", User: "u1", Delta: ptr(int64(5))})
		if rank.CodeOf(err) != rank.CodeUnavailable || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("event under prefix %s: err = %v, want unavailable wrapping NOPERM", otherPrefix, err)
		}
		oh, err := httpapi.New(osvc, httpapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/events", `{"event_id":"x2","family":"learning","user":"u1","delta":5}`},
			{"GET", "/v1/boards/learning/current/national/top?consistency=primary", ""},
		} {
			code, body := do(t, oh, r.method, r.path, r.body)
			if code != http.StatusServiceUnavailable || !strings.Contains(body, `"unavailable"`) {
				t.Errorf("%s %s under prefix %s = %d %s, want 503 unavailable", r.method, r.path, otherPrefix, code, body)
			}
		}
		if err := rw.Do(ctx, "FLUSHALL").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("FLUSHALL: err = %v, want NOPERM", err)
		}
		if err := rw.Do(ctx, "SET", testPrefix+":k", "v").Err(); err != nil {
			// SET is granted (a script needs it), within the prefix.
			t.Errorf("SET inside the prefix: %v", err)
		}
		denied := cl.denials(t)
		for _, want := range []string{"key " + otherPrefix, "command flushall"} {
			if !slices.ContainsFunc(denied, func(d string) bool { return strings.Contains(d, want) }) {
				t.Errorf("ACL LOG has no %q entry: %v", want, denied)
			}
		}
	})

	t.Run("without the optional grants the data path works and readyz fails", func(t *testing.T) {
		ctx := ctxT(t, 10*time.Second)
		mcfg := parseConfig(t, cl.addrs, testPrefix, minUser, goodTLS)
		mc := newClient(t, mcfg, getenv, false)
		mst, err := store.New(mc, nil, store.Options{Timeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		msvc, err := gateway.New(gateway.Options{Config: mcfg, Backend: mst})
		if err != nil {
			t.Fatal(err)
		}
		course := gateway.BoardRef{Family: "course", Period: "current", Dimension: "national"}
		if pr, err := msvc.Project(ctx, course, "m1", gateway.Projection{Version: 1, Points: 3}); err != nil || !pr.Applied {
			t.Errorf("projection as %s: %+v, %v", minUser, pr, err)
		}
		if top, err := msvc.Top(ctx, course, 3, gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary}); err != nil || len(top.Entries) == 0 {
			t.Errorf("top as %s: %+v, %v", minUser, top, err)
		}
		if err := mst.Ready(ctx); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("readiness as %s: err = %v, want NOPERM (cluster info / config get)", minUser, err)
		}
	})

	t.Run("connections that must fail", func(t *testing.T) {
		rogueCfg := parseConfig(t, cl.addrs, testPrefix, gwUser, tlsKeys(rogue.CAFile, pki.ClientCert, pki.ClientKey))
		noCert := parseConfig(t, cl.addrs, testPrefix, gwUser, tlsKeys(pki.CAFile, "", ""))
		plain := *cfg
		plain.Redis.TLS, plain.Redis.TLSCAFile, plain.Redis.TLSCertFile, plain.Redis.TLSKeyFile = false, "", "", ""
		if err := plain.Validate(); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			title  string
			cfg    *config.Config
			getenv func(string) string
			check  func(error) bool
			want   string
		}{
			{"wrong password", cfg, func(string) string { return "not-" + password }, func(err error) bool {
				return strings.Contains(err.Error(), "WRONGPASS")
			}, "WRONGPASS"},
			{"the default user (off)", parseConfig(t, cl.addrs, testPrefix, "", goodTLS), func(string) string { return "" }, func(err error) bool {
				return strings.Contains(err.Error(), "NOAUTH")
			}, "NOAUTH"},
			{"plain TCP to the TLS port", &plain, getenv, func(err error) bool { return true }, "any error"},
			{"server certificate from another CA", rogueCfg, getenv, func(err error) bool {
				var ua x509.UnknownAuthorityError
				return errors.As(err, &ua) || strings.Contains(err.Error(), "certificate signed by unknown authority")
			}, "x509: certificate signed by unknown authority"},
			{"no client certificate (tls-auth-clients yes)", noCert, getenv, func(err error) bool { return true }, "any error"},
		}
		for _, tt := range tests {
			t.Run(tt.title, func(t *testing.T) {
				// The gateway does not start: preloading the scripts fails
				// (the cluster client may keep redialling until the deadline).
				c := newClient(t, tt.cfg, tt.getenv, false)
				begin := time.Now()
				if err := store.Preload(ctxT(t, 3*time.Second), c); err == nil {
					t.Errorf("preload succeeded, want %s", tt.want)
				} else {
					t.Logf("preload refused in %s: %v", time.Since(begin).Round(time.Millisecond), err)
				}
				// One node, one dial: the cause itself (from NewClient,
				// which asks the node whether it is a cluster node, or
				// else from a PING).
				one := *tt.cfg
				one.Redis.Addrs = tt.cfg.Redis.Addrs[:1]
				n, err := clientFor(t, &one, tt.getenv, false)
				if err == nil {
					err = n.Ping(ctxT(t, 3*time.Second)).Err()
				}
				switch {
				case err == nil:
					t.Errorf("PING %s succeeded, want %s", one.Redis.Addrs[0], tt.want)
				case !tt.check(err):
					t.Errorf("PING %s: err = %v, want %s", one.Redis.Addrs[0], err, tt.want)
				}
			})
		}
	})
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// exercise runs every gateway operation that touches Redis and checks the
// answers are right, not merely error-free.
func (sk *stack) exercise(t testing.TB) {
	ctx := ctxT(t, 30*time.Second)
	svc, st, h := sk.svc, sk.st, sk.h
	primary := gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary}
	nat := gateway.BoardRef{Family: "learning", Period: "current", Dimension: "national"}
	prov := gateway.BoardRef{Family: "learning", Period: "current", Dimension: "province:zhejiang"}

	if err := svc.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
	if code, body := do(t, h, "GET", "/readyz", ""); code != http.StatusOK {
		t.Errorf("GET /readyz = %d %s", code, body)
	}

	// Events with dims under tie first: u00 reaches 20 first, so ranks
	// above u01 that reaches 20 later.
	const nUsers = 20
	for i := range nUsers {
		points := int64(10 + 10*(i%5)) // 10..50, four users per value
		if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: fmt.Sprintf("e%02d", i), Family: "learning",
			User: fmt.Sprintf("u%02d", i), Delta: &points, Dims: map[string]string{"province": "zhejiang"}}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	dup, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "e00", Family: "learning", User: "u00", Delta: ptr(int64(10)),
		Dims: map[string]string{"province": "zhejiang"}})
	if err != nil || !dup.Duplicate {
		t.Errorf("replayed event: %+v, %v; want duplicate", dup, err)
	}
	var batch []gateway.Event
	for i := range 5 {
		batch = append(batch, gateway.Event{EventID: fmt.Sprintf("b%d", i), Family: "learning", User: fmt.Sprintf("u%02d", i),
			Delta: ptr(int64(1)), Dims: map[string]string{"province": "zhejiang"}})
	}
	items, err := svc.ApplyBatch(ctx, batch)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	for i, it := range items {
		if it.Err != nil {
			t.Errorf("batch item %d: %v", i, it.Err)
		}
	}
	// A third change of u01 on its shards bumps the live-change counter
	// (HINCRBY; the second one created it).
	if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "t1", Family: "learning", User: "u01", Delta: ptr(int64(1)),
		Dims: map[string]string{"province": "zhejiang"}}); err != nil {
		t.Errorf("third event of u01: %v", err)
	}
	// Reverse u00's batch point: u00 back to 10.
	if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "r0", Family: "learning", User: "u00", Reverses: "b0",
		Dims: map[string]string{"province": "zhejiang"}}); err != nil {
		t.Errorf("reversal: %v", err)
	}
	// A member whose only event is reversed leaves the board (ZREM).
	if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "s1", Family: "learning", User: "u99", Delta: ptr(int64(7))}); err != nil {
		t.Errorf("event s1: %v", err)
	}
	if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "s1-r", Family: "learning", User: "u99", Reverses: "s1"}); err != nil {
		t.Errorf("reversal of s1: %v", err)
	}
	if _, err := svc.Member(ctx, nat, "u99", primary); rank.CodeOf(err) != rank.CodeNotRanked {
		t.Errorf("u99 after its only event was reversed: %v, want not_ranked", err)
	}
	if err := svc.PutProfile(ctx, "u09", gateway.Profile{Name: "Ada", Avatar: "https://example.invalid/a.png"}); err != nil {
		t.Errorf("profile: %v", err)
	}
	course := gateway.BoardRef{Family: "course", Period: "current", Dimension: "national"}
	if pr, err := svc.Project(ctx, course, "u01", gateway.Projection{Version: 1, Points: 120}); err != nil || !pr.Applied {
		t.Errorf("projection: %+v, %v", pr, err)
	}

	// Top: u04 at 51 (50 + 1 from the batch), then 50 (u09, u14, u19 in the
	// order they got there; u09 has a profile), then u03 at 41, …
	top, err := svc.Top(ctx, nat, 5, gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary, Profiles: true})
	if err != nil {
		t.Fatalf("top: %v", err)
	}
	if got, want := users(top.Entries), []string{"u04", "u09", "u14", "u19", "u03"}; !slices.Equal(got, want) {
		t.Errorf("top = %v, want %v", got, want)
	}
	if len(top.Entries) > 1 && top.Entries[1].Profile["name"] != "Ada" {
		t.Errorf("top[1] profile = %v", top.Entries[1].Profile)
	}
	if _, err := svc.Top(ctx, nat, 5, gateway.ReadOptions{Consistency: gateway.ConsistencyReplica}); err != nil {
		t.Errorf("top from replicas (EVALSHA_RO, READONLY): %v", err)
	}
	m, err := svc.Member(ctx, nat, "u09", primary)
	if err != nil || m.Points != 50 || m.Position != 1 || m.Rank != 2 || m.Members != nUsers {
		t.Errorf("member u09 = %+v, %v; want points 50, position 1 (0-based), rank 2 of %d", m, err, nUsers)
	}
	if ar, err := svc.Around(ctx, nat, "u14", 1, primary); err != nil || !slices.Equal(users(ar.Entries), []string{"u09", "u14", "u19"}) {
		t.Errorf("around u14 = %v, %v", users(ar.Entries), err)
	}
	var all []string
	q := gateway.PageQuery{Limit: 7}
	for range nUsers {
		p, err := svc.Entries(ctx, nat, q, primary)
		if err != nil {
			t.Fatalf("entries: %v", err)
		}
		all = append(all, users(p.Entries)...)
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
	}
	if len(all) != nUsers || !slices.Equal(all[:5], []string{"u04", "u09", "u14", "u19", "u03"}) {
		t.Errorf("entries by cursor = %v", all)
	}
	if lk, err := svc.Lookup(ctx, nat, []string{"u00", "u19", "nobody"}, primary); err != nil || !slices.Equal(slices.Sorted(slices.Values(users(lk.Entries))), []string{"u00", "u19"}) {
		t.Errorf("lookup = %v, %v; want u00 and u19", users(lk.Entries), err)
	}
	// 40..50: u03 (41), u08, u13, u18 (40), u09, u14, u19 (50).
	if n, err := svc.Count(ctx, nat, 40, 50, primary); err != nil || n.Count != 7 {
		t.Errorf("count 40..50 = %+v, %v; want 7", n, err)
	}
	if rg, err := svc.Range(ctx, prov, gateway.RangeQuery{Min: 41, Max: 50, Limit: 10}, primary); err != nil ||
		!slices.Equal(users(rg.Entries), []string{"u09", "u14", "u19", "u03"}) {
		t.Errorf("range 41..50 on province:zhejiang = %v, %v; want u09 u14 u19 u03", users(rg.Entries), err)
	}
	// A derived family: final = base + 2 × bonus, ZUNIONSTORE per shard in
	// the key group's slot.
	for i, ev := range []gateway.Event{
		{Family: "base", User: "d1", Delta: ptr(int64(10))}, {Family: "base", User: "d2", Delta: ptr(int64(30))},
		{Family: "bonus", User: "d1", Delta: ptr(int64(15))},
	} {
		ev.EventID = fmt.Sprintf("d%d", i)
		if _, err := svc.ApplyEvent(ctx, ev); err != nil {
			t.Errorf("event %s on %s: %v", ev.EventID, ev.Family, err)
		}
	}
	if _, err := svc.Derive(ctx, "final", "current"); err != nil {
		t.Errorf("derive: %v", err)
	}
	final := gateway.BoardRef{Family: "final", Period: "current", Dimension: "national"}
	if top, err := svc.Top(ctx, final, 2, primary); err != nil || !slices.Equal(users(top.Entries), []string{"d1", "d2"}) || top.Entries[0].Points != 40 {
		t.Errorf("derived top = %+v, %v; want d1 (10 + 2×15 = 40), d2 (30)", top.Entries, err)
	}

	snap, err := svc.CreateSnapshot(ctx, nat, 100, time.Minute)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if p, err := svc.Entries(ctx, nat, gateway.PageQuery{Limit: 5, Offset: 5, HasOffset: true, Snapshot: snap.Snapshot}, primary); err != nil ||
		!slices.Equal(users(p.Entries), all[5:10]) {
		t.Errorf("snapshot page = %v, %v; want %v", users(p.Entries), err, all[5:10])
	}
	if bl, err := svc.Boards(ctx, "learning", "current"); err != nil || len(bl.Boards) != 2 {
		t.Errorf("boards = %+v, %v", bl, err)
	}
	lay, err := svc.Layout(ctx, "learning", "")
	if err != nil {
		t.Fatalf("layout: %v", err)
	}
	var shards int
	var members, memory int64
	for _, b := range lay.Boards {
		for _, s := range b.Shards {
			shards++
			members += s.Members
			memory += s.Memory
			if s.Node == "uncovered" {
				t.Errorf("layout shard %s: uncovered", s.Key)
			}
		}
	}
	if shards != 5 || len(lay.Nodes) != 3 || members != 2*nUsers || memory <= 0 {
		t.Errorf("layout: %d shards on %d masters, %d members, %d bytes; want 5 on 3, %d members, memory > 0",
			shards, len(lay.Nodes), members, memory, 2*nUsers)
	}

	// What only ledger mode runs (archive, rebuild, reconcile), straight on
	// the store: fill fresh keys and RENAME them in, ZSCAN, PEXPIRE.
	k := shard.Layout{Prefix: sk.cfg.Redis.Prefix}.Keys(shard.Board{Family: "course", Period: "all", DimType: "national"}, 0, 2)
	if n, err := st.Rebuild(ctx, k, []store.RebuildEntry{{Member: "r1", Score: 7, Version: 1}, {Member: "r2", Score: 9, Version: 2}}, 0); err != nil || n != 2 {
		t.Errorf("rebuild: %d, %v", n, err)
	}
	if ms, _, _, err := st.ShardMembers(ctx, k.Z, 0, 100); err != nil || len(ms) != 2 {
		t.Errorf("shard members: %v, %v", ms, err)
	}
	if err := st.Expire(ctx, []string{k.Z, k.M}, time.Hour); err != nil {
		t.Errorf("expire: %v", err)
	}

	// The NOSCRIPT fallbacks: with every node's script cache flushed, a
	// pipelined write re-runs with EVAL and a replica read with EVAL_RO.
	sk.cl.eachNode(t, func(ctx context.Context, _ string, a *redis.Client) error { return a.ScriptFlush(ctx).Err() })
	if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "after-flush", Family: "learning", User: "u05", Delta: ptr(int64(1)),
		Dims: map[string]string{"province": "zhejiang"}}); err != nil {
		t.Errorf("event after SCRIPT FLUSH: %v", err)
	}
	if _, err := svc.Top(ctx, nat, 3, gateway.ReadOptions{Consistency: gateway.ConsistencyReplica}); err != nil {
		t.Errorf("replica top after SCRIPT FLUSH: %v", err)
	}
	if err := store.Preload(ctx, st.Primary()); err != nil {
		t.Errorf("preload again: %v", err)
	}

	exerciseModeration(t, ctx, svc, nat)

	// The scheduler's lease (lease.lua: GET, INCRBY on the fence, SET PX,
	// PEXPIRE, DEL).
	lease := st.NewLease(shard.Layout{Prefix: sk.cfg.Redis.Prefix}.Lease("acl"), "gw-acl", time.Minute)
	if tok, err := lease.Hold(ctx); err != nil || tok <= 0 {
		t.Errorf("lease acquire: %d, %v", tok, err)
	}
	if tok, err := lease.Hold(ctx); err != nil || tok <= 0 {
		t.Errorf("lease renew: %d, %v", tok, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Errorf("lease release: %v", err)
	}

	// The cluster monitor: INFO, CLUSTER NODES/MYID, SCAN, MEMORY USAGE.
	mon, err := monitor.New(st.Primary(), monitor.Options{Prefix: sk.cfg.Redis.Prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Poll(ctx); err != nil {
		t.Errorf("monitor poll: %v", err)
	}

	// Freeze, then a late event is refused and kept for review.
	if d, err := svc.Freeze(ctx, "learning", "current"); err != nil || d.State != "frozen" {
		t.Fatalf("freeze: %+v, %v", d, err)
	}
	_, err = svc.ApplyEvent(ctx, gateway.Event{EventID: "late", Family: "learning", User: "u00", Delta: ptr(int64(1)),
		Dims: map[string]string{"province": "zhejiang"}})
	if rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Errorf("event on a frozen period: %v, want period_closed", err)
	}
	if rv, err := svc.Reviews(ctx, "learning", "current", 10); err != nil || len(rv.Reviews) != 1 {
		t.Errorf("reviews = %+v, %v; want the late event", rv, err)
	}
}

// exerciseModeration runs what moderation and the shared cache level send:
// remove.lua (DELETE a member), the bans' MULTI, HGETALL and unban.lua, and
// lease.lua with SET/GET of a shared cached page. It sends no event of a
// banned member (that would add a review the freeze check counts).
func exerciseModeration(t testing.TB, ctx context.Context, svc *gateway.Service, nat gateway.BoardRef) {
	mod := gateway.Removal{Operator: "ops@x", Reason: "cheat"}
	if rm, err := svc.RemoveMember(ctx, nat, "u02", mod); err != nil || !rm.Removed {
		t.Errorf("remove u02: %+v, %v", rm, err)
	}
	ban, err := svc.PutBan(ctx, "u03", gateway.BanRequest{Operator: "ops@x", Reason: "bot", Families: []string{"learning"}})
	if err != nil || len(ban.Removed) == 0 {
		t.Errorf("ban u03: %+v, %v; want it removed from the learning boards", ban, err)
	}
	if bl, err := svc.ListBans(ctx); err != nil || len(bl.Bans) != 1 || bl.Bans[0].User != "u03" {
		t.Errorf("bans = %+v, %v; want u03", bl, err)
	}
	if lifted, err := svc.DeleteBan(ctx, "u03"); err != nil || lifted.Reason != "bot" {
		t.Errorf("lift the ban of u03: %+v, %v", lifted, err)
	}

	hot := gateway.BoardRef{Family: "hot", Period: "current", Dimension: "national"}
	for i, u := range []string{"u01", "u02"} {
		if _, err := svc.ApplyEvent(ctx, gateway.Event{EventID: "hot" + u, Family: "hot", User: u, Delta: ptr(int64(3 - i))}); err != nil {
			t.Errorf("event on the shared-cache family: %v", err)
		}
	}
	cached := gateway.ReadOptions{Consistency: gateway.ConsistencyCached}
	for i := range 2 { // the first computes under the lease and stores the page
		top, err := svc.Top(ctx, hot, 3, cached)
		if err != nil || !slices.Equal(users(top.Entries), []string{"u01", "u02"}) {
			t.Errorf("shared cached top, read %d: %v, %v; want [u01 u02]", i, users(top.Entries), err)
		}
	}
	// A removal drops the shared copy (CLUSTER GETKEYSINSLOT, UNLINK): were
	// it refused, the next cached read would serve the stale copy.
	if rm, err := svc.RemoveMember(ctx, hot, "u01", mod); err != nil || !rm.Removed {
		t.Errorf("remove u01 from the shared-cache family: %+v, %v", rm, err)
	}
	if top, err := svc.Top(ctx, hot, 3, cached); err != nil || !slices.Equal(users(top.Entries), []string{"u02"}) {
		t.Errorf("shared cached top after removing u01: %v, %v; want [u02]", users(top.Entries), err)
	}
}

func users(es []rank.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.User
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func toAny(head ...any) []any {
	var out []any
	for _, h := range head {
		if ss, ok := h.([]string); ok {
			for _, s := range ss {
				out = append(out, s)
			}
			continue
		}
		out = append(out, h)
	}
	return out
}

func do(t testing.TB, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

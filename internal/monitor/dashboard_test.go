package monitor_test

// The dashboard and the alert rules in deploy/ name metrics; this test checks
// every rankgate_* name they use against what a live gateway really exports:
// the real handler stack in-process on the test cluster, driven through the
// paths that make each series appear, plus one monitor poll.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/teststack"
)

const (
	dashboardFile  = "../../deploy/grafana/rankgate.json"
	rulesFile      = "../../deploy/prometheus/rules.yml"
	prometheusFile = "../../deploy/prometheus/prometheus.yml"
)

var metricName = regexp.MustCompile(`\brankgate_[a-zA-Z0-9_]+`)

// metricNames returns the rankgate_* metric names an expression uses, with
// the histogram suffixes stripped.
func metricNames(expr string) []string {
	var out []string
	for _, m := range metricName.FindAllString(expr, -1) {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			m = strings.TrimSuffix(m, suf)
		}
		out = append(out, m)
	}
	return out
}

// dashboardExprs returns every PromQL string of a Grafana dashboard: panel
// targets' expr and template variable queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if !strings.Contains(string(raw), "${DS_PROMETHEUS}") {
		t.Errorf("%s: panels should use the datasource input ${DS_PROMETHEUS}", dashboardFile)
	}
	var exprs []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				walk(c, k)
			}
		case []any:
			for _, c := range v {
				walk(c, key)
			}
		case string:
			if key == "expr" || key == "query" || key == "definition" {
				exprs = append(exprs, v)
			}
		}
	}
	walk(dash, "")
	return exprs
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// flakyBackend fails the reads of one key on cue: a shard that does not answer.
type flakyBackend struct {
	gateway.Backend
	fail atomic.Pointer[string]
}

// ReadShards fails the reads of the chosen key; the rest go to Redis.
func (b *flakyBackend) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	k := b.fail.Load()
	if k == nil {
		b.Backend.ReadShards(ctx, reads, replica, out)
		return
	}
	for i, r := range reads {
		if r.Key == *k {
			out[i] = store.ShardReply{Err: errors.New("injected shard failure")}
			continue
		}
		b.Backend.ReadShards(ctx, reads[i:i+1], replica, out[i:i+1])
	}
}

// live drives a real in-process gateway through writes, duplicates, a late
// event, cached and uncached reads, a partial answer, and one monitor poll,
// and returns the names of the metric families it then exports.
func live(t *testing.T) map[string]bool {
	t.Helper()
	var flaky *flakyBackend
	// A family with lifecycle makes the gateway run its scheduler (and export
	// its metrics) as a live one with such a family does.
	// An indexed family makes it keep a read index (and export its metrics).
	families := teststack.DefaultFamilies + `  sprint:
    period: day
    lifecycle:
      archive: {after: 1h}
    dimensions:
      national: {shards: 1}
  indexed:
    period: week
    index: {enabled: true}
    dimensions:
      national: {shards: 2}
`
	stack := teststack.New(t, teststack.Options{Families: families, WrapBackend: func(b gateway.Backend) gateway.Backend {
		flaky = &flakyBackend{Backend: b}
		return flaky
	}})
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)
	call := func(method, path, body string, want int) []byte {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s; want %d", method, path, res.StatusCode, b, want)
		}
		return b
	}
	event := func(id, user string, delta int, at string) string {
		s := fmt.Sprintf(`{"event_id":%q,"family":"learning","user":%q,"delta":%d,"dims":{"province":"zhejiang"}`, id, user, delta)
		if at != "" {
			s += fmt.Sprintf(`,"at":%q`, at)
		}
		return s + "}"
	}
	for i := range 20 {
		call("POST", "/v1/events", event(fmt.Sprintf("e%d", i), fmt.Sprintf("u%d", i), 10+i, ""), http.StatusOK)
	}
	call("POST", "/v1/events", event("e1", "u1", 11, ""), http.StatusOK) // a retry: a dedupe hit
	lateAt := time.Now().Add(-15 * 24 * time.Hour).UTC().Format(time.RFC3339)
	call("POST", "/v1/events", event("late-1", "u1", 5, lateAt), http.StatusConflict) // period_closed: late

	const board = "/v1/boards/learning/current/national"
	call("GET", board+"/top?limit=5", "", http.StatusOK) // cache miss
	call("GET", board+"/top?limit=5", "", http.StatusOK) // cache hit
	call("GET", board+"/members/u3", "", http.StatusOK)
	call("GET", board+"/members/u3/around?radius=2", "", http.StatusOK)
	call("GET", board+"/entries?limit=5", "", http.StatusOK)
	call("GET", "/v1/families", "", http.StatusOK)

	// One national shard stops answering: a partial answer.
	var lay gateway.Layout
	if err := json.Unmarshal(call("GET", "/v1/layout", "", http.StatusOK), &lay); err != nil {
		t.Fatal(err)
	}
	var key string
	for _, b := range lay.Boards {
		if strings.HasSuffix(b.Board, "/national") && len(b.Shards) > 1 {
			key = b.Shards[0].Key
		}
	}
	if key == "" {
		t.Fatalf("no national board in the layout: %+v", lay)
	}
	flaky.fail.Store(&key)
	var page gateway.Page
	if err := json.Unmarshal(call("GET", board+"/top?limit=5&partial=allow&consistency=primary", "", http.StatusOK), &page); err != nil {
		t.Fatal(err)
	}
	flaky.fail.Store(nil)
	if !page.Partial {
		t.Fatalf("top with a failing shard and partial=allow answered partial=false: %+v", page)
	}

	// The read index: a board of the indexed family loaded and followed
	// (its per-board gauges appear once it is ready).
	ctx, cancel := context.WithCancel(context.Background())
	indexDone := make(chan struct{})
	go func() { defer close(indexDone); stack.Service.RunIndex(ctx) }()
	t.Cleanup(func() { cancel(); <-indexDone })
	call("POST", "/v1/events", `{"event_id":"ix1","family":"indexed","user":"u1","delta":3}`, http.StatusOK)
	gather := func() map[string]bool {
		t.Helper()
		mfs, err := stack.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		return names
	}
	soon.Eventually(t, 30*time.Second, func() error {
		call("GET", "/v1/boards/indexed/current/national/top?limit=5", "", http.StatusOK)
		if !gather()["rankgate_index_board_lag_seconds"] {
			return errors.New("the indexed board is not ready yet")
		}
		return nil
	})

	// A live stream: its snapshot makes the per-family subscriber gauge and
	// the computation histogram appear.
	liveCtx, liveCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer liveCancel()
	req, err := http.NewRequestWithContext(liveCtx, http.MethodGet, srv.URL+board+"/live?top=5", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/live: %d", board, res.StatusCode)
	}
	var seen strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(seen.String(), "event: snapshot") {
		n, err := res.Body.Read(buf)
		seen.Write(buf[:n])
		if err != nil {
			t.Fatalf("live stream before its snapshot: %v (read %q)", err, seen.String())
		}
	}
	if !gather()["rankgate_live_subscribers"] {
		t.Fatal("an open live stream, and no rankgate_live_subscribers")
	}
	liveCancel()
	res.Body.Close()

	if err := stack.Monitor.Poll(context.Background()); err != nil {
		t.Fatalf("monitor poll: %v", err)
	}
	return gather()
}

func TestDashboardAndRulesUseRealMetrics(t *testing.T) {
	t.Parallel()
	// Names found in the dashboard and in the rules, with where they are used.
	used := map[string][]string{}
	for _, e := range dashboardExprs(t) {
		for _, n := range metricNames(e) {
			used[n] = append(used[n], "dashboard")
		}
	}
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules ruleFile
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" || r.For == "" || r.Annotations["summary"] == "" ||
				!slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) {
				t.Errorf("rule %q in %s: every alert needs for, a severity label (warning|critical) and a summary", r.Alert, g.Name)
			}
			if len(metricNames(r.Expr)) == 0 {
				t.Errorf("alert %s uses no rankgate metric: %s", r.Alert, r.Expr)
			}
			for _, n := range metricNames(r.Expr) {
				used[n] = append(used[n], "alert "+r.Alert)
			}
		}
	}
	for _, a := range []string{"RankgateHigh5xxRatio", "RankgateP99LatencyHigh", "RankgatePartialAnswers",
		"RankgateRedisErrorsRising", "RankgateRedisNodeDown", "RankgateReplicationLagHigh",
		"RankgateMaxmemoryPolicyNotNoeviction", "RankgateCacheHitRatioLow", "RankgateLateEventsSpike"} {
		if !slices.Contains(alerts, a) {
			t.Errorf("%s: alert %s is missing", rulesFile, a)
		}
	}
	// What the dashboard must show (the list), so an extraction bug
	// cannot pass as an empty check.
	for _, n := range []string{"rankgate_http_requests_total", "rankgate_http_request_duration_seconds",
		"rankgate_cache_requests_total", "rankgate_fanout_node_duration_seconds", "rankgate_partial_answers_total",
		"rankgate_redis_errors_total", "rankgate_script_errors_total", "rankgate_late_events_total",
		"rankgate_redis_node_ops_per_second", "rankgate_redis_node_used_memory_bytes",
		"rankgate_redis_replication_lag_bytes", "rankgate_read_entries_fetched_total",
		"rankgate_read_entries_returned_total", "rankgate_dedupe_hits_total"} {
		if !slices.Contains(used[n], "dashboard") {
			t.Errorf("%s: no panel uses %s", dashboardFile, n)
		}
	}

	prom, err := os.ReadFile(prometheusFile)
	if err != nil {
		t.Fatal(err)
	}
	var pc struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(prom, &pc); err != nil {
		t.Fatalf("%s: %v", prometheusFile, err)
	}
	if len(pc.ScrapeConfigs) == 0 || len(pc.ScrapeConfigs[0].StaticConfigs) == 0 ||
		!slices.Contains(pc.ScrapeConfigs[0].StaticConfigs[0].Targets, "127.0.0.1:8080") || !slices.Contains(pc.RuleFiles, "rules.yml") {
		t.Errorf("%s: want a scrape of 127.0.0.1:8080 and rules.yml loaded: %+v", prometheusFile, pc)
	}

	exported := live(t)
	var missing []string
	for n, where := range used {
		if !exported[n] {
			slices.Sort(where)
			missing = append(missing, fmt.Sprintf("%s (used by %s)", n, strings.Join(slices.Compact(where), ", ")))
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("not exported by a live gateway: %s", m)
	}
	if t.Failed() {
		var have []string
		for n := range exported {
			if strings.HasPrefix(n, "rankgate_") {
				have = append(have, n)
			}
		}
		slices.Sort(have)
		t.Logf("the gateway exports: %s", strings.Join(have, " "))
	}
}

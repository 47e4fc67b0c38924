package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/soon"
)

// TestE2EMonitorAndStatusPage: the real program polls the cluster off the
// request path (node metrics on /metrics), lists its families on
// /v1/families, serves the status page, and stops the monitor on shutdown
// (the graceful return is checked by startGateway's cleanup).
func TestE2EMonitorAndStatusPage(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)

	soon.Eventually(t, 10*time.Second, func() error {
		m := g.metrics(t)
		if up, ok := metricSum(m, "rankgate_redis_node_up"); !ok || up != 6 {
			return fmt.Errorf("rankgate_redis_node_up does not sum to 6 nodes:\n%s", linesWithPrefix(m, "rankgate_redis_node_up"))
		}
		if _, ok := metricSum(m, "rankgate_redis_replication_lag_bytes"); !ok {
			t.Error("no rankgate_redis_replication_lag_bytes on /metrics")
		}
		return nil
	})

	var fams struct {
		Families []struct {
			Name       string   `json:"name"`
			Period     string   `json:"period"`
			Dimensions []string `json:"dimensions"`
			Columns    []struct {
				Name  string `json:"name"`
				Order string `json:"order"`
				Max   int64  `json:"max"`
			} `json:"columns"`
			Index *struct {
				MaxLagMs int64 `json:"max_lag_ms"`
			} `json:"index"`
		} `json:"families"`
	}
	g.ok(t, "GET", "/v1/families", nil, &fams)
	var names []string
	for _, f := range fams.Families {
		names = append(names, f.Name)
		if f.Name == "learning" && (f.Period != "week" || strings.Join(f.Dimensions, ",") != "national,class,province") {
			t.Errorf("learning listed as %+v", f)
		}
		if (f.Name == "indexed") != (f.Index != nil) || f.Index != nil && f.Index.MaxLagMs != 30000 {
			t.Errorf("%s listed with index %+v (only indexed has one, max_lag 30s)", f.Name, f.Index)
		}
		if f.Name == "race" && (len(f.Columns) != 2 || f.Columns[0].Name != "time_ms" || f.Columns[0].Order != "asc" || f.Columns[1].Max != 999) {
			t.Errorf("race listed as %+v", f)
		}
	}
	if strings.Join(names, ",") != "course,game,indexed,learning,race" {
		t.Errorf("families %v, want course, game, indexed, learning, race", names)
	}

	if r := g.do(t, "GET", "/ui", nil); r.status != http.StatusMovedPermanently || r.header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %s Location %q", r, r.header.Get("Location"))
	}
	if r := g.do(t, "GET", "/ui/", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "rankgate status") {
		t.Errorf("GET /ui/: %.200s", r)
	}
	if r := g.do(t, "GET", "/ui/live/learning/current/national", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "rankgate live") {
		t.Errorf("GET /ui/live/learning/current/national: %.200s", r)
	}
}

func linesWithPrefix(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

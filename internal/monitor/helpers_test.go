package monitor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// series is one gathered sample: its labels and value.
type series struct {
	labels map[string]string
	value  float64
}

// gather returns the registry's samples by metric name.
func gather(t *testing.T, g prometheus.Gatherer) map[string][]series {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string][]series{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := series{labels: map[string]string{}}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			s.value = value(m)
			out[mf.GetName()] = append(out[mf.GetName()], s)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// clusterClient is the store's client on the test cluster; hook, when set,
// is added to every node client the cluster client creates.
func clusterClient(t *testing.T, hook func(addr string) redis.Hook) redis.UniversalClient {
	t.Helper()
	c, err := store.NewClient(store.ClientOptions{Addrs: testcluster.Addrs(t), Cluster: true,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if hook != nil {
		c.(*redis.ClusterClient).OnNewNode(func(n *redis.Client) {
			if h := hook(n.Options().Addr); h != nil {
				n.AddHook(h)
			}
		})
	}
	return c
}

// failHook fails the monitor's INFO pipelines on one node (not the
// connection handshake, also a pipeline), either at once or, with block, once
// the context is done.
type failHook struct{ block bool }

var errInjected = errors.New("injected failure")

func (failHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (h failHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || cmds[0].Name() != "info" {
			return next(ctx, cmds)
		}
		if h.block {
			<-ctx.Done()
			return ctx.Err()
		}
		return errInjected
	}
}

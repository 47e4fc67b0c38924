package redissec

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/store"
)

// stack is the gateway wired as cmd/gateway wires it (openStore): a primary
// and a replica-reading client built from config, scripts preloaded on
// every node, the store, the service and the HTTP API.
type stack struct {
	cl  *tlsCluster
	cfg *config.Config
	rw  redis.UniversalClient
	st  *store.Store
	svc *gateway.Service
	h   http.Handler
	reg *prometheus.Registry
}

// directReads is how many reads went straight to a master through the
// read transport tr (rankgate_redis_direct_reads_total).
func (sk *stack) directReads(t testing.TB, tr string) float64 {
	t.Helper()
	mfs, err := sk.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rankgate_redis_direct_reads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "transport" && lp.GetValue() == tr {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no rankgate_redis_direct_reads_total{transport=%q}", tr)
	return 0
}

func newStack(t testing.TB, cl *tlsCluster, cfg *config.Config, getenv func(string) string) *stack {
	t.Helper()
	rw := newClient(t, cfg, getenv, false)
	ro := newClient(t, cfg, getenv, true)
	if err := store.Preload(ctxT(t, 10*time.Second), rw); err != nil {
		t.Fatalf("preload as %s over TLS: %v", cfg.Redis.Username, err)
	}
	reg := prometheus.NewRegistry()
	st, err := store.New(rw, ro, store.Options{Timeout: 4 * time.Second, Registerer: reg, ReadTransport: cfg.Redis.ReadTransport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	// The read transport's own connections (rueidis: HELLO 3 AUTH over
	// TLS as the ACL user), dialled as openStore does.
	if err := st.ConnectReaders(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("read transport %s as %s over TLS: %v", cfg.Redis.ReadTransport, cfg.Redis.Username, err)
	}
	svc, err := gateway.New(gateway.Options{Config: cfg, Backend: st, Registerer: reg, ShardTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(svc, httpapi.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return &stack{cl: cl, cfg: cfg, rw: rw, st: st, svc: svc, h: h, reg: reg}
}

// setUser (re)defines an ACL user on every node (ACL is per node, not
// replicated) and clears every node's ACL LOG.
func (c *tlsCluster) setUser(t testing.TB, user, password, prefix string, cmds []string) {
	t.Helper()
	c.eachNode(t, func(ctx context.Context, _ string, a *redis.Client) error {
		if err := a.Do(ctx, toAny("ACL", "SETUSER", SetUserArgs(user, password, prefix, cmds))...).Err(); err != nil {
			return fmt.Errorf("ACL SETUSER %s: %w", user, err)
		}
		return a.Do(ctx, "ACL", "LOG", "RESET").Err()
	})
}

// setUserCLI runs ACL SETUSER on every node at once the way
// docs/security.md tells operators to: redis-cli --cluster call. That stops
// reading the command at the first argument starting with "-", hence
// cliArgs spells -@all as nocommands.
func (c *tlsCluster) setUserCLI(t testing.TB, user, password, prefix string, cmds []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := []string{"--tls", "--cacert", c.pki.CAFile, "--cert", c.pki.ClientCert, "--key", c.pki.ClientKey,
		"--user", adminUser, "--cluster", "call", c.addrs[0], "ACL", "SETUSER"}
	args = append(args, cliArgs(SetUserArgs(user, password, prefix, cmds))...)
	cmd := exec.CommandContext(ctx, "redis-cli", args...)
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+c.adminPass)
	setDeathSignal(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil || bytes.Count(out, []byte(": OK")) != len(c.nodes) {
		t.Fatalf("redissec: redis-cli --cluster call ACL SETUSER: %v\n%s", err, out)
	}
}

// cliArgs is SetUserArgs for redis-cli --cluster call: -@all becomes its
// alias nocommands.
func cliArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "-@all" {
			out[i] = "nocommands"
		}
	}
	return out
}

// denials returns every node's ACL LOG entries as "node: reason object
// (context, user)" lines.
func (c *tlsCluster) denials(t testing.TB) []string {
	t.Helper()
	var out []string
	c.eachNode(t, func(ctx context.Context, addr string, a *redis.Client) error {
		v, err := a.Do(ctx, "ACL", "LOG").Slice()
		if err != nil {
			return fmt.Errorf("ACL LOG: %w", err)
		}
		for _, e := range v {
			f := aclFields(e)
			out = append(out, fmt.Sprintf("%s: %s %s (%s, user %s)", addr, f["reason"], f["object"], f["context"], f["username"]))
		}
		return nil
	})
	return out
}

// aclFields reads one ACL LOG entry, a RESP2 list or a RESP3 map.
func aclFields(e any) map[string]string {
	out := map[string]string{}
	switch x := e.(type) {
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = fmt.Sprint(x[i+1])
		}
	case map[any]any:
		for k, v := range x {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return out
}

func (c *tlsCluster) deniedObjects(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, d := range c.denials(t) {
		out = append(out, strings.Fields(strings.SplitN(d, ": ", 2)[1])[1])
	}
	return out
}

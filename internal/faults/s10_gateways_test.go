//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// gatewayPorts are the listen ports of scenario 10's gateway processes.
var gatewayPorts = []int{7960, 7961, 7962}

// gwProc is one real gateway process (cmd/gateway) of scenario 10.
type gwProc struct {
	bin, config, log string
	port             int
	mu               sync.Mutex
	cmd              *exec.Cmd
}

func (g *gwProc) url() string { return fmt.Sprintf("http://127.0.0.1:%d", g.port) }

// start runs the binary and waits until /readyz answers 200.
func (g *gwProc) start(ctx context.Context) error {
	logf, err := os.OpenFile(g.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(g.bin, "-config", g.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	go func() { _ = cmd.Wait(); _ = logf.Close() }()
	g.mu.Lock()
	g.cmd = cmd
	g.mu.Unlock()
	return poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url()+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("readyz %d", resp.StatusCode)
	})
}

func (g *gwProc) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd != nil && g.cmd.Process != nil {
		_ = g.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// buildGateway builds cmd/gateway into dir.
func buildGateway(t *testing.T, dir string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gateway")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gateway")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gateway: %v\n%s", err, out)
	}
	return bin
}

// httpGateways is the multi-gateway client: attempt k of an event goes to
// gateway (start + k) mod n, so an attempt that failed on one gateway is
// retried — with the same event id — on another.
type httpGateways struct {
	gws []*gwProc
	hc  *http.Client
}

func newHTTPGateways(gws []*gwProc) *httpGateways {
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: 300 * time.Millisecond}).DialContext, MaxIdleConnsPerHost: 32}
	return &httpGateways{gws: gws, hc: &http.Client{Transport: tr}}
}

// do sends one request; a transport error or a 5xx is rank.Unavailable
// (retryable), another non-200 an error with the answer's code.
func (h *httpGateways) do(ctx context.Context, g *gwProc, method, path string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.url()+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return 0, rank.Unavailable(err, "gateway %d", g.port)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusOK:
		if out != nil {
			return resp.StatusCode, json.Unmarshal(b, out)
		}
		return resp.StatusCode, nil
	case resp.StatusCode >= 500:
		return resp.StatusCode, rank.Unavailable(fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), "gateway %d", g.port)
	default:
		return resp.StatusCode, fmt.Errorf("gateway %d: %d %s", g.port, resp.StatusCode, strings.TrimSpace(string(b)))
	}
}

func (h *httpGateways) apply(ctx context.Context, e *event, attempt int) error {
	g := h.gws[(e.user+attempt)%len(h.gws)]
	_, err := h.do(ctx, g, http.MethodPost, "/v1/events", eventBody(e.id, e.user, e.delta), nil)
	return err
}

func eventBody(id string, user int, delta int64) map[string]any {
	return map[string]any{"event_id": id, "family": family, "user": userName(user), "delta": delta,
		"dims": map[string]string{"province": provinceOf(user)}}
}

// read: Top 10 or a member of national at consistency=primary, through a
// random gateway, observed for the history checker.
func (h *httpGateways) read(ctx context.Context, rng *rand.Rand) (string, error) {
	g := h.gws[rng.IntN(len(h.gws))]
	board := "/v1/boards/" + family + "/all/national"
	if rng.IntN(2) == 0 {
		var p struct {
			Entries []rank.Entry `json:"entries"`
		}
		_, err := h.do(ctx, g, http.MethodGet, board+"/top?limit=10&consistency=primary", nil, &p)
		if err == nil {
			for _, en := range p.Entries {
				observe(ctx, en.User, en.Points)
			}
		}
		return "national", err
	}
	var m struct {
		User   string `json:"user"`
		Points int64  `json:"points"`
	}
	_, err := h.do(ctx, g, http.MethodGet, board+"/members/"+userName(rng.IntN(users))+"?consistency=primary", nil, &m)
	if err == nil {
		observe(ctx, m.User, m.Points)
	}
	return "national", err
}

// Scenario 10: three real gateway processes (cmd/gateway) over one cluster,
// behind a client that moves to another gateway on error and retries with
// the same event id. SIGKILL one gateway mid-load and restart it 1 s later:
// no event is lost or counted twice, and the client's events keep being
// acknowledged through the others. Then a freeze through one gateway must
// be honoured by the others within 1 s.
func TestManyGateways(t *testing.T) {
	c := getCluster(t, baseGateways)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatalf("cluster %d not healthy: %v", baseGateways, err)
	}
	// The in-process stack shares the gateways' prefix: the audit reads
	// Redis through it.
	s := newStack(t, c, stackOptions{})
	dir := t.TempDir()
	bin := buildGateway(t, dir)
	gws := make([]*gwProc, len(gatewayPorts))
	for i, port := range gatewayPorts {
		g := &gwProc{bin: bin, port: port, config: filepath.Join(dir, fmt.Sprintf("gw%d.yaml", i)), log: filepath.Join(dir, fmt.Sprintf("gw%d.log", i))}
		y := fmt.Sprintf("listen: \"127.0.0.1:%d\"\nredis:\n  addrs: [%s]\n  prefix: %q\n  read_timeout: 500ms\n  write_timeout: 500ms\n  dial_timeout: 1s\n  cluster_reload_interval: 1s\nfamilies:\n%s",
			port, strings.Join(c.addrs, ", "), s.prefix, familiesYAML)
		if err := os.WriteFile(g.config, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := g.start(ctx); err != nil {
			b, _ := os.ReadFile(g.log)
			t.Fatalf("gateway on %d: %v\n%s", port, err, b)
		}
		t.Cleanup(g.kill)
		gws[i] = g
	}
	h := newHTTPGateways(gws)
	l := newLoad(s, "gw", loadConfig{apply: h.apply, read: h.read})
	l.seed(t)
	l.start(time.Minute)
	time.Sleep(2 * time.Second)

	victim := gws[1]
	t0 := time.Now()
	victim.kill()
	time.Sleep(time.Second)
	tRestart := time.Now()
	if err := victim.start(ctx); err != nil {
		t.Fatalf("restart gateway %d: %v", victim.port, err)
	}
	tUp := time.Now()
	time.Sleep(2 * time.Second)
	l.finish(t)

	// Events invoked while the victim was down or starting: how long the
	// client took to get them acknowledged through another gateway.
	l.mu.Lock()
	var during, slow int
	var worst time.Duration
	for _, e := range l.events {
		if e.invoked.Before(t0) || e.invoked.After(tUp) {
			continue
		}
		during++
		if !e.acked {
			continue
		}
		d := e.ackedAt.Sub(e.invoked)
		worst = max(worst, d)
		if d > time.Second {
			slow++
		}
	}
	l.mu.Unlock()
	a := runAudit(t, s, l)
	cn := l.counts()
	t.Logf("load: %d write attempts (%d failed), %d reads (%d failed)", cn.writes, cn.writeErrs, cn.reads, cn.readErrs)
	if cn.writeErrs > 0 {
		t.Logf("write errors: %s", l.errorKinds(true))
	}

	// Freeze through gateway 0 while probes write through 1 and 2.
	type probe struct {
		gw         int
		start, end time.Time
		status     int
		err        error
	}
	var (
		pmu    sync.Mutex
		probes []probe
		pwg    sync.WaitGroup
	)
	stopProbes := make(chan struct{})
	for _, gi := range []int{1, 2} {
		pwg.Add(1)
		go func(gi int) {
			defer pwg.Done()
			for n := 0; ; n++ {
				select {
				case <-stopProbes:
					return
				case <-time.After(20 * time.Millisecond):
				}
				pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
				st := time.Now()
				status, err := h.do(pctx, gws[gi], http.MethodPost, "/v1/events", eventBody(fmt.Sprintf("frz-%d-%d", gi, n), n%users, 1), nil)
				pcancel()
				pmu.Lock()
				probes = append(probes, probe{gw: gi, start: st, end: time.Now(), status: status, err: err})
				pmu.Unlock()
			}
		}(gi)
	}
	time.Sleep(500 * time.Millisecond)
	tF0 := time.Now()
	var frozen struct {
		State string `json:"state"`
	}
	if _, err := h.do(ctx, gws[0], http.MethodPost, "/v1/periods/"+family+"/all/freeze", nil, &frozen); err != nil {
		t.Fatalf("freeze through gateway %d: %v", gws[0].port, err)
	}
	tF := time.Now()
	time.Sleep(1500 * time.Millisecond)
	close(stopProbes)
	pwg.Wait()
	var lastOK time.Duration = -1
	acceptedAfter, refused, other := 0, 0, 0
	for _, p := range probes {
		switch {
		case p.status == http.StatusOK && p.start.After(tF):
			acceptedAfter++
			lastOK = max(lastOK, p.start.Sub(tF))
		case p.status == http.StatusConflict && strings.Contains(fmt.Sprint(p.err), "period_closed"):
			refused++
		case p.status != http.StatusOK && p.start.After(tF0):
			other++
		}
	}
	honoured := "immediately (no write accepted that started after the freeze answered)"
	if acceptedAfter > 0 {
		honoured = fmt.Sprintf("%d writes accepted that started after the freeze answered, the last +%s", acceptedAfter, lastOK.Round(time.Millisecond))
	}
	t.Log(resultLine("10 three gateway processes; SIGKILL one 1s, restart; freeze through one", "redis-only", outage{na: true}, outage{na: true},
		fmt.Sprintf("events_invoked_while_down=%d worst_ack_latency=%s acked_after_1s=%d gateway_restart=%s freeze_state=%s freeze_elsewhere=[%s; %d refused 409 period_closed, %d other] audit=%s",
			during, worst.Round(10*time.Millisecond), slow, tUp.Sub(tRestart).Round(10*time.Millisecond), frozen.State, honoured, refused, other, a)))
	for _, d := range a.details {
		t.Logf("  audit: %s", d)
	}
	if !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
	if during == 0 {
		t.Errorf("no event was invoked while gateway %d was down: the scenario measured nothing", victim.port)
	}
	if lastOK > time.Second {
		t.Errorf("gateways 1 and 2 accepted writes %s after the freeze through gateway 0 answered; goal 1s", lastOK)
	}
	if refused == 0 {
		t.Errorf("no probe write was refused after the freeze")
	}
	if other > 0 {
		t.Errorf("%d probe writes failed with something other than 409 period_closed", other)
	}
}

//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rankgate/rankgate/internal/rank"
)

// pgPort is the port of the PostgreSQL scenario 9 starts for itself; the
// machine's shared server (5432) is never stopped.
const pgPort = 7989

// privatePG is a PostgreSQL of the test's own: deploy/deps.sh postgres with
// RANKGATE_PG_PRIVATE=1 (initdb as the postgres user, trust auth, loopback
// only) under a directory of its own, removed at cleanup.
type privatePG struct {
	dir, bin, dsn string
}

func depsSh(ctx context.Context, dir, need string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy", "deps.sh"), need)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RANKGATE_TEST_PG_DSN=") { // else deps.sh hands back the shared server
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "RANKGATE_PG_PRIVATE=1", "RANKGATE_PG_PORT="+strconv.Itoa(pgPort), "RANKGATE_PG_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("deploy/deps.sh %s: %w\n%s", need, err, errb.String())
	}
	return strings.TrimSpace(out.String()), nil
}

func startPrivatePG(t *testing.T) *privatePG {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := &privatePG{dir: fmt.Sprintf("/tmp/rankgate-faults-pg-%d", pgPort)}
	if _, err := depsSh(ctx, p.dir, "postgres-down"); err != nil { // a leftover of an earlier run
		t.Logf("private PostgreSQL: removing leftovers: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := depsSh(ctx, p.dir, "postgres-down"); err != nil {
			t.Logf("private PostgreSQL: %v", err)
		}
	})
	var err error
	if p.dsn, err = depsSh(ctx, p.dir, "postgres"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.dsn, ":"+strconv.Itoa(pgPort)+"/") {
		t.Fatalf("deploy/deps.sh gave %s, not the private server on %d", p.dsn, pgPort)
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("pg_ctl not found under /usr/lib/postgresql")
	}
	sort.Strings(bins)
	p.bin = filepath.Dir(bins[len(bins)-1])
	return p
}

// ctl runs pg_ctl on the private server as the postgres user.
func (p *privatePG) ctl(ctx context.Context, args ...string) error {
	full := append([]string{"-u", "postgres", "--", filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.dir, "data")}, args...)
	if os.Getuid() != 0 {
		full = full[3:]
	}
	name := "runuser"
	if os.Getuid() != 0 {
		name = full[0]
		full = full[1:]
	}
	out, err := exec.CommandContext(ctx, name, full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (p *privatePG) stop(ctx context.Context) error {
	return p.ctl(ctx, "-m", "fast", "-w", "-t", "30", "stop")
}

func (p *privatePG) start(ctx context.Context) error {
	return p.ctl(ctx, "-l", filepath.Join(p.dir, "postgres.log"), "-w", "-t", "60", "-o",
		fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s", pgPort, filepath.Join(p.dir, "run")), "start")
}

// terminateInFlight ends the backends of the test database that are running
// a statement or sit inside a transaction; it returns how many.
func (p *privatePG) terminateInFlight(ctx context.Context) (int, error) {
	c, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
		AND state IN ('active', 'idle in transaction')`).Scan(&n)
	return n, err
}

// writeWindow summarizes the write attempts that ran wholly inside [from, to].
func (l *load) writeWindow(from, to time.Time) (ok, unavailable, other int, firstOther string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.ops {
		if !x.write || x.start.Before(from) || x.end.After(to) {
			continue
		}
		switch {
		case x.err == nil:
			ok++
		case rank.CodeOf(x.err) == rank.CodeUnavailable:
			unavailable++
		default:
			other++
			if firstOther == "" {
				firstOther = x.err.Error()
			}
		}
	}
	return
}

// pgRecovery is how long after t the first write that started at or after t
// succeeded; -1 when none did.
func (l *load) firstWriteAfter(t time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	best := time.Duration(-1)
	for _, x := range l.ops {
		if x.write && x.err == nil && !x.start.Before(t) && (best < 0 || x.end.Sub(t) < best) {
			best = x.end.Sub(t)
		}
	}
	return best
}

// Scenario 9: PostgreSQL faults in ledger mode, on a PostgreSQL of the
// test's own. (a) Restart it under load: while it is down every write
// answers 503 unavailable (nothing is acknowledged that the ledger did not
// commit); writes recover within 5 s after it is back. (b) Terminate the
// backends of in-flight transactions repeatedly for 2 s: the writes they
// carried fail with 503 and are retried with the same id. The projector runs
// throughout; the audit re-projects what is left, rebuilds from the ledger
// and must be exact.
func TestPostgresFaults(t *testing.T) {
	pg := startPrivatePG(t)
	e := setupFault(t, basePostgres, stackOptions{ledger: true, pgDSN: pg.dsn}, loadConfig{}, "pg")
	pctx, stopProjector := context.WithCancel(context.Background())
	projDone := make(chan struct{})
	go func() { defer close(projDone); e.s.svc.RunProjector(pctx, 500*time.Millisecond) }()
	defer func() { stopProjector(); <-projDone }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// (a) restart
	tStop := time.Now()
	if err := pg.stop(ctx); err != nil {
		t.Fatal(err)
	}
	tDown := time.Now()
	time.Sleep(2 * time.Second)
	tStart := time.Now()
	if err := pg.start(ctx); err != nil {
		t.Fatal(err)
	}
	tUp := time.Now()
	if !waitFor(15*time.Second, func() bool { return e.l.firstWriteAfter(tUp) >= 0 }) {
		t.Errorf("no write succeeded within 15s after PostgreSQL was back")
	}
	time.Sleep(time.Second)
	okDown, unavDown, otherDown, firstOther := e.l.writeWindow(tDown, tStart)
	recA := e.l.firstWriteAfter(tUp)
	outA := e.l.firstWriteAfter(tStop)

	// (b) terminate in-flight transactions
	tK0 := time.Now()
	killed := 0
	for time.Since(tK0) < 2*time.Second {
		n, err := pg.terminateInFlight(ctx)
		if err != nil {
			t.Logf("pg_terminate_backend: %v", err)
		}
		killed += n
		time.Sleep(50 * time.Millisecond)
	}
	tK1 := time.Now()
	if !waitFor(10*time.Second, func() bool { return e.l.firstWriteAfter(tK1) >= 0 }) {
		t.Errorf("no write succeeded within 10s after the last terminated backend")
	}
	recB := e.l.firstWriteAfter(tK1)
	okK, unavK, otherK, firstOtherK := e.l.writeWindow(tK0, tK1)
	time.Sleep(time.Second)
	e.l.finish(t)
	stopProjector()
	<-projDone

	w := e.l.outageOf(true, tStop, func(op) bool { return true })
	r := e.l.outageOf(false, tStop, func(op) bool { return true })
	a := runAudit(t, e.s, e.l)
	cn := e.l.counts()
	t.Logf("load: %d write attempts (%d failed), %d reads (%d failed)", cn.writes, cn.writeErrs, cn.reads, cn.readErrs)
	if cn.writeErrs > 0 {
		t.Logf("write errors: %s", e.l.errorKinds(true))
	}
	verdict := "met"
	if recA < 0 || recA > 5*time.Second {
		verdict = "MISSED"
	}
	t.Log(resultLine("9a restart PostgreSQL (down 2s) under load", e.s.mode(), w, r,
		fmt.Sprintf("down_window=[%d ok, %d 503, %d other] recovery_after_up=%s goal=5s:%s pg_stop=%s pg_start=%s audit=%s",
			okDown, unavDown, otherDown, recA.Round(10*time.Millisecond), verdict, tDown.Sub(tStop).Round(10*time.Millisecond),
			tUp.Sub(tStart).Round(10*time.Millisecond), a)))
	t.Log(resultLine("9b pg_terminate_backend of in-flight transactions, every 50ms for 2s", e.s.mode(), outage{na: true}, outage{na: true},
		fmt.Sprintf("backends_terminated=%d window=[%d ok, %d 503, %d other] first_write_after=%s outage_from_stop=%s",
			killed, okK, unavK, otherK, recB.Round(10*time.Millisecond), outA.Round(10*time.Millisecond))))
	for _, d := range a.details {
		t.Logf("  audit: %s", d)
	}
	if okDown > 0 {
		t.Errorf("%d writes acknowledged while PostgreSQL was down", okDown)
	}
	if otherDown > 0 || otherK > 0 {
		t.Errorf("writes failed with something other than 503 unavailable: %s %s", firstOther, firstOtherK)
	}
	if unavDown == 0 {
		t.Errorf("no write attempt ran while PostgreSQL was down: the scenario measured nothing")
	}
	if recA < 0 || recA > 5*time.Second {
		t.Errorf("writes recovered %s after PostgreSQL was back; goal 5s", recA)
	}
	if killed == 0 {
		t.Logf("note: no in-flight transaction was caught by pg_terminate_backend")
	}
	if !a.exact() {
		t.Errorf("audit not exact: %s", a)
	}
}

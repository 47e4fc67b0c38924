package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/plan"
	"github.com/rankgate/rankgate/internal/plan/calibrate"
	"github.com/rankgate/rankgate/internal/store"
)

// planCmd is `gateway plan -config FILE -scenario FILE [-scenario FILE…]
// [-json out.json] [-sample N] [-calls N]`: it calibrates on the live cluster
// (sample boards under a private prefix, removed at the end), projects the
// scenario onto the cluster's slot map (or an even split over the planned
// masters) and prints the capacity plan; see docs/capacity.md.
func planCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var scenarios []string
	var jsonOut string
	sample, calls := 5000, 100
	_, cfg, log, err := parseFlags("plan", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.Func("scenario", "scenario YAML `file` (repeatable; later files override earlier keys)", func(v string) error {
			scenarios = append(scenarios, v)
			return nil
		})
		fs.StringVar(&jsonOut, "json", "", "also write the plan as JSON to this `file` (- for stdout)")
		fs.Func("sample", "members of the large sample boards (default 5000)", positiveInt(&sample))
		fs.Func("calls", "API calls measured per operation (default 100)", positiveInt(&calls))
	})
	if err != nil {
		return err
	}
	if len(scenarios) == 0 {
		return fmt.Errorf("-scenario FILE is required (a load-tool scenario, with the planner keys of docs/capacity.md)")
	}
	sc, err := plan.LoadScenario(scenarios...)
	if err != nil {
		return err
	}
	fam, ok := cfg.Family(sc.Family)
	if !ok {
		return fmt.Errorf("scenario family %q: the config has no such family (it has %v)", sc.Family, cfg.FamilyNames)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()

	rw, err := redisClient(cfg, getenv, log, false, nil, nil)
	if err != nil {
		return err
	}
	defer rw.Close()
	// calibrate.Run removes its keys itself, also when it fails or is interrupted.
	cal, err := calibrate.Run(ctx, calibrate.Options{Config: cfg, Client: rw, Scenario: &sc, Sample: sample, Calls: calls, Logger: log})
	if err != nil {
		return err
	}
	st, err := store.New(rw, nil, store.Options{Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	ranges, err := st.Slots(ctx)
	if err != nil {
		return err
	}
	pl := plan.Placement{Source: "live cluster slot map"}
	live := map[string]bool{}
	for _, r := range ranges {
		pl.Ranges = append(pl.Ranges, plan.SlotRange{Start: r.Start, End: r.End, Master: r.Master})
		live[r.Master] = true
	}
	pl.Source = fmt.Sprintf("live cluster slot map (%d masters)", len(live))
	if sc.Masters > 0 && sc.Masters != len(live) {
		pl = plan.EvenPlacement(sc.Masters)
	}
	spec := period.Spec{Kind: period.Kind(fam.Period), Loc: fam.Location, WeekStart: fam.WeekStart}
	p, err := plan.Project(plan.Input{Scenario: sc, Family: fam, Ledger: cfg.Ledger.DSNEnv != "", ReplicaReads: cfg.Redis.ReplicaReads,
		PeriodID: spec.At(time.Now()).ID, Calibration: cal, Placement: pl})
	if err != nil {
		return err
	}
	if err := plan.WriteTable(stdout, p); err != nil {
		return err
	}
	if jsonOut == "" {
		return nil
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if jsonOut == "-" {
		_, err = stdout.Write(data)
		return err
	}
	return os.WriteFile(jsonOut, data, 0o644)
}

// positiveInt parses a flag value into dst, refusing anything below 1.
func positiveInt(dst *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("want a positive integer, got %q", v)
		}
		*dst = n
		return nil
	}
}

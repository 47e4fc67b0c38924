package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
)

// layoutCmd prints every board shard → slot → master, members and memory,
// and warnings for boards whose shards pile onto one node: the CLI twin of
// GET /v1/layout.
func layoutCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var family, period string
	var asJSON bool
	_, cfg, log, err := parseFlags("layout", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&family, "family", "", "only this family (default: every family)")
		fs.StringVar(&period, "period", "", "period id or current (default current)")
		fs.BoolVar(&asJSON, "json", false, "print JSON instead of tables")
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, closeStore, err := openStore(ctx, cfg, getenv, log, nil, nil)
	if err != nil {
		return err
	}
	defer closeStore()
	svc, err := gateway.New(gateway.Options{Config: cfg, Backend: st, Logger: log})
	if err != nil {
		return err
	}
	l, err := svc.Layout(ctx, family, period)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSLOTS\tSHARDS\tMEMBERS\tMEMORY\tREPLICAS")
	for _, n := range l.Nodes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%v\n", n.Node, n.Slots, n.Shards, n.Members, bytesHuman(n.Memory), n.Replicas)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "BOARD\tSHARD\tSLOT\tNODE\tMEMBERS\tMEMORY\tKEY")
	for _, b := range l.Boards {
		for _, s := range b.Shards {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\n", b.Board, s.Shard, s.Slot, s.Node, s.Members, bytesHuman(s.Memory), s.Key)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(l.Boards) == 0 {
		fmt.Fprintln(stdout, "\nno boards in the listed periods yet")
	}
	for _, w := range l.Warnings {
		fmt.Fprintln(stdout, "WARNING:", w)
	}
	return nil
}

func bytesHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

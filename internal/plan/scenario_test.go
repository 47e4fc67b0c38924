package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/workload"
)

// mixedYAML is loadtest/scenarios/mixed.yaml with keys only the load tool
// reads (gateway, duration, prefill…): the planner must ignore them.
const mixedYAML = `
name: mixed
gateway: http://127.0.0.1:8080
family: learning
members: 100000
provinces: 8
classes: 50
board_skew: 1.0
member_skew: 0.9
mode: open
rate: 200
duration: 10s
ops:
  - {op: event,  weight: 20}
  - {op: batch,  weight: 2,  batch: 100}
  - {op: top,    weight: 40, limit: 100, board: any}
  - {op: member, weight: 14, board: any}
  - {op: around, weight: 8,  board: any, radius: 5}
  - {op: page,   weight: 8,  board: any, limit: 50, depth: 5}
  - {op: lookup, weight: 8,  board: any, users: 20, consistency: replica}
prefill:
  batch: 500
  concurrency: 4
`

func TestParseScenarioReadsTheLoadToolFormat(t *testing.T) {
	sc := DefaultScenario()
	if err := ParseScenario([]byte(mixedYAML), &sc); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := sc.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if sc.Name != "mixed" || sc.Members != 100000 || sc.Provinces != 8 || sc.Classes != 50 || sc.Rate != 200 || sc.MemberSkew != 0.9 {
		t.Errorf("scenario: %+v", sc)
	}
	if len(sc.Ops) != 7 {
		t.Fatalf("ops: %d, want 7", len(sc.Ops))
	}
	if o := sc.Ops[6]; o.Op != workload.OpLookup || o.Users != 20 || o.Consistency != "replica" || o.Name != "lookup" || o.Board != workload.BoardAny {
		t.Errorf("lookup op: %+v", o)
	}
	// Planner keys keep their defaults.
	if sc.EventsPerMemberPerPeriod != DefaultEventsPerMember || sc.MaxOpsPerMaster != DefaultMaxOpsPerMaster || sc.Gateways != 1 || sc.EventIDLength != 36 {
		t.Errorf("planner defaults lost: %+v", sc)
	}
}

func TestLoadScenarioLayersFiles(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "mixed.yaml")
	over := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(base, []byte(mixedYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, []byte("season_periods: 8\nmasters: 6\nmax_memory_per_master: 8GiB\nrate: 5000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadScenario(base, over)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if sc.SeasonPeriods != 8 || sc.Masters != 6 || sc.MaxMemoryPerMaster != 8<<30 || sc.Rate != 5000 {
		t.Errorf("overlay not applied: %+v", sc)
	}
	if len(sc.Ops) != 7 || sc.Members != 100000 {
		t.Errorf("overlay without ops must keep the base's ops and data shape: %d ops, %d members", len(sc.Ops), sc.Members)
	}
	if _, err := LoadScenario(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file must fail")
	}
}

func TestScenarioDefaultsFillOperations(t *testing.T) {
	sc := DefaultScenario()
	if err := ParseScenario([]byte("ops:\n  - {op: top, weight: 1}\n  - {op: page, weight: 1}\n  - {op: batch, weight: 1}\n"), &sc); err != nil {
		t.Fatal(err)
	}
	want := []workload.OpSpec{
		{Name: "top", Op: workload.OpTop, Weight: 1, Board: workload.BoardAny, Limit: 100},
		{Name: "page", Op: workload.OpPage, Weight: 1, Board: workload.BoardAny, Limit: 50, Depth: 5},
		{Name: "batch", Op: workload.OpBatch, Weight: 1, Batch: 100},
	}
	for i, w := range want {
		if sc.Ops[i] != w {
			t.Errorf("op %d: %+v, want %+v", i, sc.Ops[i], w)
		}
	}
}

func TestScenarioValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		title string
		yaml  string
		want  string
	}{
		{"no rate", "rate: 0", "scenario rate:"},
		{"unknown op", "ops: [{op: zrank, weight: 1}]", "ops[0].op"},
		{"board on a write", "ops: [{op: event, weight: 1, board: national}]", "ops[0].board"},
		{"province reads without provinces", "provinces: 0\nops: [{op: top, weight: 1, board: province}]", "ops[0].board"},
		{"zero weights", "ops: [{op: top, weight: 0}]", "scenario ops: weights"},
		{"bad consistency", "ops: [{op: top, weight: 1, consistency: eventual}]", "ops[0].consistency"},
		{"big lookup", "ops: [{op: lookup, weight: 1, users: 5000}]", "ops[0].users"},
		{"members", "members: 0", "scenario members:"},
		{"fraction", "max_shard_ops_fraction: 2", "max_shard_ops_fraction"},
		{"gateways", "gateways: 0", "scenario gateways:"},
		{"event id", "event_id_length: 200", "event_id_length"},
		{"masters", "masters: -1", "scenario masters:"},
	} {
		t.Run(tc.title, func(t *testing.T) {
			sc := DefaultScenario()
			if err := ParseScenario([]byte(tc.yaml), &sc); err != nil {
				t.Fatalf("parse: %v", err)
			}
			err := sc.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	sc := DefaultScenario()
	if err := sc.Validate(); err != nil {
		t.Errorf("the default scenario must be valid: %v", err)
	}
}

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		bad  bool
	}{
		{in: "1048576", want: 1 << 20},
		{in: "8GiB", want: 8 << 30},
		{in: "8gib", want: 8 << 30},
		{in: "512 MiB", want: 512 << 20},
		{in: "1.5GiB", want: 3 << 29},
		{in: "2GB", want: 2e9},
		{in: "16g", want: 16 << 30},
		{in: "lots", bad: true},
		{in: "8XB", bad: true},
		{in: "-1GiB", bad: true},
	} {
		got, err := ParseByteSize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: want an error, got %d", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	sc := DefaultScenario()
	if err := ParseScenario([]byte("max_memory_per_master: [1]"), &sc); err == nil {
		t.Error("a list is not a size")
	}
}

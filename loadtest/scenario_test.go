package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/workload"
)

func TestParseScenario(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, sc Scenario)
		wantErr string
	}{
		{
			name: "empty keeps defaults",
			yaml: "",
			check: func(t *testing.T, sc Scenario) {
				d := DefaultScenario()
				if sc.Family != d.Family || sc.Rate != d.Rate || len(sc.Ops) != len(d.Ops) {
					t.Fatalf("defaults changed: %+v", sc)
				}
			},
		},
		{
			name: "fields and ops replace defaults",
			yaml: `
name: top-uncached
family: game
members: 5000
provinces: 0
classes: 0
board_skew: 0
member_skew: 1.2
mode: closed
workers: 8
duration: 30s
timeout: 2s
ops:
  - op: top
    weight: 3
    board: national
    limit: 100
    consistency: primary
  - op: batch
    weight: 1
    batch: 250
prefill:
  members: 5000
  batch: 1000
`,
			check: func(t *testing.T, sc Scenario) {
				if sc.Name != "top-uncached" || sc.Family != "game" || sc.Members != 5000 || sc.Provinces != 0 || sc.MemberSkew != 1.2 {
					t.Errorf("scalars: %+v", sc)
				}
				if sc.Mode != "closed" || sc.Workers != 8 || sc.Duration != 30*time.Second || sc.Timeout != 2*time.Second {
					t.Errorf("load: %+v", sc)
				}
				if len(sc.Ops) != 2 {
					t.Fatalf("ops: %+v", sc.Ops)
				}
				top, batch := sc.Ops[0], sc.Ops[1]
				if top.Name != "top" || top.Limit != 100 || top.Consistency != "primary" || top.Board != "national" {
					t.Errorf("top: %+v", top)
				}
				if batch.Name != "batch" || batch.Batch != 250 || batch.Board != "" {
					t.Errorf("batch: %+v", batch)
				}
				if sc.Prefill.Members != 5000 || sc.Prefill.Batch != 1000 || sc.Prefill.Concurrency != 4 {
					t.Errorf("prefill keeps unset defaults: %+v", sc.Prefill)
				}
				if err := sc.Validate(); err != nil {
					t.Errorf("valid scenario refused: %v", err)
				}
			},
		},
		{
			name: "op defaults filled",
			yaml: "ops: [{op: page, weight: 1}, {op: lookup, weight: 1}, {op: around, weight: 1}]",
			check: func(t *testing.T, sc Scenario) {
				p, l, a := sc.Ops[0], sc.Ops[1], sc.Ops[2]
				if p.Limit != 50 || p.Depth != 5 || p.Board != workload.BoardAny || l.Users != 20 || a.Radius != 5 {
					t.Errorf("defaults: %+v %+v %+v", p, l, a)
				}
			},
		},
		{name: "unknown key", yaml: "rate: 10\nrat: 20\n", wantErr: "rat: unknown key (line 2;"},
		{name: "unknown op key", yaml: "ops: [{op: top, weigth: 1}]", wantErr: "ops[0].weigth: unknown key (line 1;"},
		{name: "bad duration", yaml: "duration: ten seconds", wantErr: "time.Duration"},
		{name: "not a map", yaml: "- 1\n- 2\n", wantErr: "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := DefaultScenario()
			err := ParseScenario([]byte(tt.yaml), &sc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, sc)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(sc *Scenario)
		want   string // substring of the error; "" = valid
	}{
		{"defaults", func(sc *Scenario) {}, ""},
		{"bad mode", func(sc *Scenario) { sc.Mode = "burst" }, "mode: must be open or closed"},
		{"zero rate", func(sc *Scenario) { sc.Rate = 0 }, "rate"},
		{"closed needs workers", func(sc *Scenario) { sc.Mode, sc.Workers = "closed", 0 }, "workers"},
		{"unbounded duration", func(sc *Scenario) { sc.Duration = 2 * time.Hour }, "duration"},
		{"remote gateway", func(sc *Scenario) { sc.Gateway = "http://10.1.2.3:8080" }, "not a loopback address"},
		{"gateway with path", func(sc *Scenario) { sc.Gateway = "http://127.0.0.1:8080/v1" }, "without a path"},
		{"localhost ok", func(sc *Scenario) { sc.Gateway = "http://localhost:8080" }, ""},
		{"bad prefix", func(sc *Scenario) { sc.MemberPrefix = "a b" }, "member_prefix"},
		{"unknown op", func(sc *Scenario) { sc.Ops = []workload.OpSpec{{Name: "x", Op: "delete", Weight: 1}} }, "ops[0].op"},
		{"duplicate names", func(sc *Scenario) { sc.Ops = append(sc.Ops, workload.Op(workload.OpTop, 1)) }, "used twice"},
		{"zero weights", func(sc *Scenario) {
			for i := range sc.Ops {
				sc.Ops[i].Weight = 0
			}
		}, "weights must add up"},
		{"board on write", func(sc *Scenario) { sc.Ops[0].Board = workload.BoardNational }, "board is for reads"},
		{"province without provinces", func(sc *Scenario) { sc.Provinces = 0; sc.Ops[2].Board = workload.BoardProvince }, "province boards need provinces"},
		{"consistency on write", func(sc *Scenario) { sc.Ops[0].Consistency = "primary" }, "is for reads"},
		{"bad consistency", func(sc *Scenario) { sc.Ops[2].Consistency = "eventual" }, "consistency"},
		{"limit too big", func(sc *Scenario) { sc.Ops[2].Limit = 5000 }, "limit"},
		{"batch too big", func(sc *Scenario) { sc.Ops[1].Batch = 1001 }, "batch"},
		{"prefill beyond members", func(sc *Scenario) { sc.Prefill.Members = sc.Members + 1 }, "prefill.members"},
		{"prefill batch", func(sc *Scenario) { sc.Prefill.Members, sc.Prefill.Batch = 10, 0 }, "prefill.batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := DefaultScenario()
			tt.mutate(&sc)
			err := sc.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseArgsFlagsOverrideFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/s.yaml"
	if err := os.WriteFile(path, []byte("rate: 50\nmembers: 2000\nops: [{op: top, weight: 1, limit: 10}, {op: event, weight: 1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, _, _, err := parseArgs([]string{"-scenario", path, "-rate", "75", "-limit", "100", "-consistency", "primary"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Rate != 75 {
		t.Errorf("flag should override file: rate %d", sc.Rate)
	}
	if sc.Members != 2000 {
		t.Errorf("file should override default: members %d", sc.Members)
	}
	if sc.Ops[0].Limit != 100 || sc.Ops[0].Consistency != "primary" {
		t.Errorf("per-op overrides not applied to reads: %+v", sc.Ops[0])
	}
	if sc.Ops[1].Consistency != "" {
		t.Errorf("per-op read override applied to a write: %+v", sc.Ops[1])
	}
	sc, _, _, err = parseArgs([]string{"-prefill", "300000"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Members != 300000 {
		t.Errorf("-prefill beyond the default members should grow them: %d", sc.Members)
	}
}

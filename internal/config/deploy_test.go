package config

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDeployConfigs: the configs that deploy/compose mounts and the Helm
// chart renders load and validate as the gateway would load them, listen
// beyond loopback with every token filled by what the deployment provides,
// and reach the ledger through the env var the deployment sets.
func TestDeployConfigs(t *testing.T) {
	t.Parallel()
	type deployment struct {
		title     string
		cfg       []byte
		tokenEnvs []string // env vars the deployment fills with tokens
		dsnEnv    string   // env var it fills with the ledger DSN ("" none)
	}
	var deps []deployment

	compose, err := os.ReadFile("../../deploy/compose/rankgate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var composeFile struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	readYAML(t, "../../deploy/compose/docker-compose.yml", &composeFile)
	var composeEnvs []string
	for k := range composeFile.Services["gateway"].Environment {
		composeEnvs = append(composeEnvs, k)
	}
	deps = append(deps, deployment{"deploy/compose", compose, composeEnvs, "RANKGATE_LEDGER_DSN"})

	var values struct {
		Config map[string]any `yaml:"config"`
		Tokens []struct {
			Env string `yaml:"env"`
		} `yaml:"tokens"`
		Ledger struct {
			Env string `yaml:"env"`
		} `yaml:"ledger"`
	}
	readYAML(t, "../../deploy/helm/rankgate/values.yaml", &values)
	chart, err := yaml.Marshal(values.Config)
	if err != nil {
		t.Fatal(err)
	}
	var chartEnvs []string
	for _, tok := range values.Tokens {
		chartEnvs = append(chartEnvs, tok.Env)
	}
	deps = append(deps, deployment{"deploy/helm values.yaml config", chart, chartEnvs, ""})
	// The chart with its ledger on, as its docs say to set it.
	values.Config["ledger"] = map[string]any{"dsn_env": values.Ledger.Env}
	chartLedger, err := yaml.Marshal(values.Config)
	if err != nil {
		t.Fatal(err)
	}
	deps = append(deps, deployment{"deploy/helm with ledger", chartLedger, chartEnvs, values.Ledger.Env})

	for _, d := range deps {
		t.Run(d.title, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(d.cfg)
			if err != nil {
				t.Fatalf("%s: %v", d.title, err)
			}
			if c.ListenIsLoopback() {
				t.Errorf("listen %q is loopback: unreachable from outside the container", c.Listen)
			}
			if len(c.Auth.Tokens) == 0 {
				t.Fatal("no auth tokens: the gateway refuses to start on a non-loopback listen")
			}
			env := map[string]string{}
			for i, k := range d.tokenEnvs {
				env[k] = "secret-" + string(rune('a'+i))
			}
			if _, err := c.Auth.Secrets(func(k string) string { return env[k] }); err != nil {
				t.Errorf("a token the config names is not provided by the deployment (%v): %v", d.tokenEnvs, err)
			}
			if got := c.Ledger.DSNEnv; got != d.dsnEnv {
				t.Errorf("ledger.dsn_env = %q, want %q (what the deployment fills)", got, d.dsnEnv)
			}
			if len(c.FamilyNames) == 0 {
				t.Error("no families")
			}
			if !slices.Contains(c.FamilyNames, "learning") {
				t.Errorf("families %v: the docs' tour uses learning", c.FamilyNames)
			}
		})
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestStagesScript: deploy/tools/stages.sh (make bench-ledger's stage
// quantiles) prints a histogram's quantiles between two scrapes, and when the
// scrapes hold nothing to show (a wrong port, a renamed metric) it warns on
// stderr and exits 1 without printing a table.
func TestStagesScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	const before = `rankgate_ledger_group_stage_seconds_bucket{stage="record",le="0.001"} 1
rankgate_ledger_group_stage_seconds_bucket{stage="record",le="0.01"} 2
rankgate_ledger_group_stage_seconds_bucket{stage="record",le="+Inf"} 2
rankgate_ledger_group_stage_seconds_sum{stage="record"} 0.005
rankgate_ledger_group_stage_seconds_count{stage="record"} 2
rankgate_ledger_connections 3
`
	after := strings.NewReplacer(`"0.001"} 1`, `"0.001"} 3`, `"0.01"} 2`, `"0.01"} 6`, `"+Inf"} 2`, `"+Inf"} 6`,
		"0.005", "0.02", `"record"} 2`, `"record"} 6`).Replace(before)
	const row = `| rankgate_ledger_group_stage_seconds{stage="record"} | 4 | 3.75 | 1 | 10 | 10 | 10 |`
	// A second histogram, in the after scrape only: a before scrape
	// without it.
	const tx = `rankgate_ledger_tx_stage_seconds_bucket{op="record_group",stage="commit",le="0.001"} 5
rankgate_ledger_tx_stage_seconds_bucket{op="record_group",stage="commit",le="+Inf"} 5
rankgate_ledger_tx_stage_seconds_sum{op="record_group",stage="commit"} 0.002
rankgate_ledger_tx_stage_seconds_count{op="record_group",stage="commit"} 5
`
	both := []string{"rankgate_ledger_group_stage_seconds", "rankgate_ledger_tx_stage_seconds"}
	one := []string{"rankgate_ledger_group_stage_seconds"}
	tests := []struct {
		name          string
		want          []string // -w histograms
		before, after []string // the scrapes, r1, r2, …
		wantRC        int
		wantOut       string // a line of stdout ("" none: stdout empty)
		wantErr       string // in stderr ("" none: stderr empty)
	}{
		{"a histogram observed", one, []string{before}, []string{after}, 0, row, ""},
		// Without -w: the want array stays empty (unbound to bash < 4.4
		// under set -u unless expanded as ${want[@]+…}).
		{"a histogram observed, no -w", nil, []string{before}, []string{after}, 0, row, ""},
		{"two runs", one, []string{before, before}, []string{after, after}, 0,
			`| rankgate_ledger_group_stage_seconds{stage="record"} | 8 | 3.75 | 1 | 10 | 10 | 10 |`, ""},
		{"empty scrapes (a wrong port)", nil, []string{""}, []string{""}, 1, "", "WARNING: all 2 scrapes are empty"},
		// An empty before would make the run's delta the after's lifetime
		// totals.
		{"an empty before scrape", one, []string{""}, []string{after}, 1, "",
			"r1.before.prom holds no samples of rankgate_ledger_group_stage_seconds"},
		{"an empty before scrape, no -w", nil, []string{""}, []string{after}, 1, "", "r1.before.prom holds no histogram samples"},
		{"an empty after scrape", one, []string{before}, []string{""}, 1, "",
			"r1.after.prom holds no samples of rankgate_ledger_group_stage_seconds"},
		{"one run's before scrape empty", one, []string{before, ""}, []string{after, after}, 1, "",
			"r2.before.prom holds no samples of rankgate_ledger_group_stage_seconds"},
		{"a wanted histogram in the after scrape only", both, []string{before}, []string{after + tx}, 1, "",
			"r1.before.prom holds no samples of rankgate_ledger_tx_stage_seconds"},
		{"more after scrapes than before", one, []string{before}, []string{after, after}, 1, "", "WARNING: 1 before and 2 after scrapes"},
		{"no before scrape", one, nil, []string{after}, 1, "", "WARNING: 0 before and 1 after scrapes"},
		{"a wanted histogram missing (renamed)", both, []string{before}, []string{after}, 1, "",
			"r1.after.prom holds no samples of rankgate_ledger_tx_stage_seconds"},
		{"a wanted histogram observed nothing between the scrapes", both, []string{before + tx}, []string{after + tx}, 1, "",
			"WARNING: no observations of rankgate_ledger_tx_stage_seconds"},
		{"nothing observed between the scrapes", nil, []string{before}, []string{before}, 1, "", "WARNING: no histogram observed anything"},
	}
	script, err := filepath.Abs("../../deploy/tools/stages.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write := func(when string, scrapes []string) []string {
				var files []string
				for i, sc := range scrapes {
					f := filepath.Join(dir, fmt.Sprintf("r%d.%s.prom", i+1, when))
					if err := os.WriteFile(f, []byte(sc), 0o644); err != nil {
						t.Fatal(err)
					}
					files = append(files, f)
				}
				return files
			}
			args := []string{script}
			for _, w := range tc.want {
				args = append(args, "-w", w)
			}
			args = append(append(append(args, write("before", tc.before)...), "--"), write("after", tc.after)...)
			cmd := exec.CommandContext(t.Context(), "bash", args...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			rc := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if rc != tc.wantRC {
				t.Errorf("exit status %d, want %d (stdout %q, stderr %q)", rc, tc.wantRC, stdout.String(), stderr.String())
			}
			switch out := stdout.String(); {
			case tc.wantOut == "" && out != "":
				t.Errorf("stdout %q, want nothing (no table)", out)
			case tc.wantOut != "" && !slices.Contains(strings.Split(out, "\n"), tc.wantOut):
				t.Errorf("stdout %q, want the line %q", out, tc.wantOut)
			}
			switch e := stderr.String(); {
			case tc.wantErr == "" && e != "":
				t.Errorf("stderr %q, want nothing", e)
			case !strings.Contains(e, tc.wantErr):
				t.Errorf("stderr %q, want %q in it", e, tc.wantErr)
			}
		})
	}
}

package config

import (
	"os"
	"slices"
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

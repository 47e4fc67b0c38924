package main

import (
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/config"
)

// TestNewAuditLogSecret: audit.hmac_secret_env naming an unset, empty or
// short variable stops the start with an error naming the key (never the
// value); a good one hashes erased members; none leaves erasures
// unrecordable.
func TestNewAuditLogSecret(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("z", 32)
	env := map[string]string{"GOOD": long, "SHORT": "tooshort-secret", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		title, envName string
		wantErr        bool
		wantHash       bool
	}{
		{title: "none", envName: ""},
		{title: "good", envName: "GOOD", wantHash: true},
		{title: "short", envName: "SHORT", wantErr: true},
		{title: "empty", envName: "EMPTY", wantErr: true},
		{title: "unset", envName: "UNSET", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Audit.HMACSecretEnv = c.envName
			l, err := newAuditLog(cfg, nil, nil, getenv, nil, nil, nil)
			if c.wantErr {
				if err == nil || !strings.Contains(err.Error(), "audit.hmac_secret_env") {
					t.Fatalf("err %v, want one naming audit.hmac_secret_env", err)
				}
				if v := env[c.envName]; v != "" && strings.Contains(err.Error(), v) {
					t.Fatalf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, herr := l.MemberTarget("u1")
			if (herr == nil) != c.wantHash {
				t.Fatalf("MemberTarget: %v, want a hash %v", herr, c.wantHash)
			}
		})
	}
}

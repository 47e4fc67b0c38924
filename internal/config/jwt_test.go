package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestJWTSection(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("listen: \"0.0.0.0:8080\"\nauth:\n  jwt:\n    audience: rankgate\n    keys:\n" +
		"      - {kid: k1, alg: HS256, secret_env: S1}\n      - {kid: k2, alg: EdDSA, public_key_file: /k2.pem}\n" +
		withFamily("client_writes: {max_delta: 5, max_events_per_minute: 12}")))
	if err != nil {
		t.Fatal(err)
	}
	want := &JWT{Audience: "rankgate", MemberClaim: "sub", ClockSkew: 30 * time.Second, Keys: []JWTKey{
		{Kid: "k1", Alg: AlgHS256, SecretEnv: "S1"}, {Kid: "k2", Alg: AlgEdDSA, PublicKeyFile: "/k2.pem"}}}
	if !reflect.DeepEqual(c.Auth.JWT, want) {
		t.Errorf("auth.jwt = %+v, want %+v (and no static tokens needed on a public address)", c.Auth.JWT, want)
	}
	if cw := c.Families["f"].ClientWrites; cw == nil || *cw != (ClientWrites{MaxDelta: 5, MaxEventsPerMinute: 12}) {
		t.Errorf("client_writes = %+v", cw)
	}
	if c, err := Parse([]byte(withFamily(""))); err != nil || c.Auth.JWT != nil || c.Families["f"].ClientWrites != nil {
		t.Errorf("without auth.jwt: %+v, %v; want nil (nothing changes)", c, err)
	}
}

func TestJWTParseErrors(t *testing.T) {
	t.Parallel()
	jwt := func(body string) string { return "auth:\n  jwt:\n" + body + withFamily("") }
	tests := []struct {
		name, yaml, key, msg string
	}{
		{"no keys", jwt("    audience: a\n"), "auth.jwt.keys", "at least one key"},
		{"alg none", jwt("    keys: [{kid: a, alg: none, secret_env: S}]\n"), "auth.jwt.keys[0].alg", "not one of"},
		{"HS256 without secret", jwt("    keys: [{kid: a, alg: HS256}]\n"), "auth.jwt.keys[0].secret_env", "is required"},
		{"HS256 with a file", jwt("    keys: [{kid: a, alg: HS256, secret_env: S, public_key_file: /x}]\n"), "auth.jwt.keys[0].public_key_file", "not used"},
		{"ES256 without file", jwt("    keys: [{kid: a, alg: ES256}]\n"), "auth.jwt.keys[0].public_key_file", "is required"},
		{"RS256 with a secret", jwt("    keys: [{kid: a, alg: RS256, public_key_file: /x, secret_env: S}]\n"), "auth.jwt.keys[0].secret_env", "only used with alg HS256"},
		{"duplicate kid", jwt("    keys: [{kid: a, alg: HS256, secret_env: S}, {kid: a, alg: HS256, secret_env: T}]\n"), "auth.jwt.keys[1].kid", "duplicate"},
		{"no kid of two", jwt("    keys: [{alg: HS256, secret_env: S}, {kid: b, alg: HS256, secret_env: T}]\n"), "auth.jwt.keys[0].kid", "is required"},
		{"skew too big", jwt("    clock_skew: 1h\n    keys: [{kid: a, alg: HS256, secret_env: S}]\n"), "auth.jwt.clock_skew", "out of range"},
		{"reload too fast", jwt("    reload_interval: 10ms\n    keys: [{kid: a, alg: HS256, secret_env: S}]\n"), "auth.jwt.reload_interval", "out of range"},
		{"bad member claim", jwt("    member_claim: \"a b\"\n    keys: [{kid: a, alg: HS256, secret_env: S}]\n"), "auth.jwt.member_claim", "not a claim name"},
		{"unknown key", jwt("    keys: [{kid: a, alg: HS256, secret_env: S}]\n    jwks_url: x\n"), "auth.jwt.jwks_url", "unknown key"},
		{"client_writes delta 0", withFamily("client_writes: {max_delta: 0, max_events_per_minute: 1}"), "families.f.client_writes.max_delta", "out of range"},
		{"client_writes rate 0", withFamily("client_writes: {max_delta: 1, max_events_per_minute: 0}"), "families.f.client_writes.max_events_per_minute", "out of range 1..600"},
		{"client_writes on a projection family", withFamily("source: projection\nclient_writes: {max_delta: 1, max_events_per_minute: 1}"), "families.f.client_writes", "source: events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error naming %q", tt.key)
			}
			if !hasKey(err, tt.key) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("want key %q with %q, got:\n%v", tt.key, tt.msg, err)
			}
		})
	}
}

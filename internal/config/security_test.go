package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestServerSection(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c, err := Parse([]byte(withFamily("")))
		if err != nil {
			t.Fatal(err)
		}
		want := Server{
			ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second,
			IdleTimeout: 120 * time.Second, RequestTimeout: 10 * time.Second, MaxInflight: 1000,
			GCMinHeapMiB: 64, CORS: CORS{MaxAge: 10 * time.Minute},
		}
		if !reflect.DeepEqual(c.Server, want) {
			t.Errorf("server = %+v, want %+v", c.Server, want)
		}
	})
	t.Run("every key", func(t *testing.T) {
		c, err := Parse([]byte("server:\n  read_header_timeout: 1s\n  read_timeout: 2s\n  write_timeout: 3s\n" +
			"  idle_timeout: 4s\n  request_timeout: 500ms\n  max_inflight: 7\n  gc_min_heap_mib: 0\n" + withFamily("")))
		if err != nil {
			t.Fatal(err)
		}
		want := Server{
			ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second,
			IdleTimeout: 4 * time.Second, RequestTimeout: 500 * time.Millisecond, MaxInflight: 7,
			CORS: CORS{MaxAge: 10 * time.Minute},
		}
		if !reflect.DeepEqual(c.Server, want) {
			t.Errorf("server = %+v, want %+v", c.Server, want)
		}
	})
}

func TestSecurityParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		key  string
		msg  string
	}{
		{"unknown server key", "server:\n  max_conns: 5\n" + withFamily(""), "server.max_conns", "unknown key"},
		{"zero read_header_timeout", "server:\n  read_header_timeout: 0s\n" + withFamily(""), "server.read_header_timeout", "must be > 0"},
		{"negative idle_timeout", "server:\n  idle_timeout: -1s\n" + withFamily(""), "server.idle_timeout", "must be > 0"},
		{"huge write_timeout", "server:\n  write_timeout: 2h\n  request_timeout: 1s\n" + withFamily(""), "server.write_timeout", "≤ 1h0m0s"},
		{"bad request_timeout", "server:\n  request_timeout: soon\n" + withFamily(""), "server.request_timeout", "invalid duration"},
		{"request beyond write", "server:\n  request_timeout: 31s\n" + withFamily(""), "server.request_timeout", "must be ≤ server.write_timeout"},
		{"header beyond read", "server:\n  read_header_timeout: 16s\n" + withFamily(""), "server.read_header_timeout", "must be ≤ server.read_timeout"},
		{"max_inflight 0", "server:\n  max_inflight: 0\n" + withFamily(""), "server.max_inflight", "out of range 1..1000000"},
		{"gc_min_heap_mib negative", "server:\n  gc_min_heap_mib: -1\n" + withFamily(""), "server.gc_min_heap_mib", "out of range 0..65536"},
		{"rate not a number", "auth:\n  tokens: [{token_env: T, scopes: [read], rate_per_second: fast}]\n" + withFamily(""), "auth.tokens[0].rate_per_second", "expected a finite number"},
		{"rate NaN", "auth:\n  tokens: [{token_env: T, scopes: [read], rate_per_second: .nan}]\n" + withFamily(""), "auth.tokens[0].rate_per_second", "expected a finite number"},
		{"rate infinite", "auth:\n  tokens: [{token_env: T, scopes: [read], rate_per_second: .inf}]\n" + withFamily(""), "auth.tokens[0].rate_per_second", "expected a finite number"},
		{"rate negative", "auth:\n  tokens: [{token_env: T, scopes: [read], rate_per_second: -1}]\n" + withFamily(""), "auth.tokens[0].rate_per_second", "out of range"},
		{"burst without rate", "auth:\n  tokens: [{token_env: T, scopes: [read], burst: 5}]\n" + withFamily(""), "auth.tokens[0].burst", "only used with rate_per_second"},
		{"burst 0 with rate", "auth:\n  tokens: [{token_env: T, scopes: [read], rate_per_second: 5, burst: 0}]\n" + withFamily(""), "auth.tokens[0].burst", "out of range 1..1000000"},
		{"open on all interfaces", "listen: \":8080\"\n" + withFamily(""), "auth.tokens", "not loopback-only"},
		{"open on a hostname", "listen: \"gw.internal:8080\"\n" + withFamily(""), "auth.tokens", "not loopback-only"},
		{"empty token list on a public address", "listen: 10.0.0.5:8080\nauth:\n  tokens: []\n" + withFamily(""), "auth.tokens", "not loopback-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error naming %q", tt.key)
			}
			if !hasKey(err, tt.key) {
				t.Errorf("error does not name key %q:\n%v", tt.key, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error does not contain %q:\n%v", tt.msg, err)
			}
		})
	}
}

func TestTokenRateLimits(t *testing.T) {
	c, err := Parse([]byte("listen: 0.0.0.0:8080\nauth:\n  tokens:\n" +
		"    - {token_env: A, scopes: [read]}\n" +
		"    - {token_env: B, scopes: [read], rate_per_second: 2.5}\n" +
		"    - {token_env: C, scopes: [write], rate_per_second: 100, burst: 20}\n" +
		"    - {token_env: D, scopes: [write], rate_per_second: 0.1}\n" + withFamily("")))
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{
		{TokenEnv: "A", Scopes: []string{"read"}},
		{TokenEnv: "B", Scopes: []string{"read"}, RatePerSecond: 2.5, Burst: 3},
		{TokenEnv: "C", Scopes: []string{"write"}, RatePerSecond: 100, Burst: 20},
		{TokenEnv: "D", Scopes: []string{"write"}, RatePerSecond: 0.1, Burst: 1},
	}
	if !reflect.DeepEqual(c.Auth.Tokens, want) {
		t.Errorf("tokens = %+v\nwant %+v", c.Auth.Tokens, want)
	}
}

func TestAuthSecrets(t *testing.T) {
	auth := Auth{Tokens: []Token{
		{TokenEnv: "RK_READ", Scopes: []string{ScopeRead}},
		{TokenEnv: "RK_WRITE", Scopes: []string{ScopeWrite}},
	}}
	tests := []struct {
		name string
		env  map[string]string
		want []string
		key  string // the key the error names; "" when none
		msg  string
	}{
		{"both set", map[string]string{"RK_READ": "r-0123456789abcdef", "RK_WRITE": " w+/~.-_0123==\n"}, []string{"r-0123456789abcdef", "w+/~.-_0123=="}, "", ""},
		{"one unset", map[string]string{"RK_READ": "r-0123456789abcdef"}, nil, "auth.tokens[1].token_env", "RK_WRITE is empty or unset"},
		{"one blank", map[string]string{"RK_READ": "  ", "RK_WRITE": "w-secret-1"}, nil, "auth.tokens[0].token_env", "RK_READ is empty or unset"},
		{"not a bearer token", map[string]string{"RK_READ": "has secret space", "RK_WRITE": "w-secret-1"}, nil, "auth.tokens[0].token_env", "not a bearer token"},
		{"same value twice", map[string]string{"RK_READ": "same-secret-9", "RK_WRITE": "same-secret-9"}, nil, "auth.tokens[1].token_env", "same token as auth.tokens[0] (RK_READ)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := auth.Secrets(func(k string) string { return tt.env[k] })
			if tt.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Secrets = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Secrets succeeded: %q", got)
			}
			if !hasKey(err, tt.key) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v: want key %s and %q", err, tt.key, tt.msg)
			}
			for _, v := range tt.env {
				if v := strings.TrimSpace(v); v != "" && strings.Contains(err.Error(), v) {
					t.Errorf("error leaks a token value: %v", err)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error is not a *FieldError: %T", err)
			}
		})
	}
	if got, err := (Auth{}).Secrets(nil); err != nil || len(got) != 0 {
		t.Errorf("no tokens: %q, %v", got, err)
	}
}

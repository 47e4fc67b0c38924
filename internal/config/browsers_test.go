package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// server.cors and auth.tickets: the keys browsers on other origins need.

func TestBrowserKeysDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(withFamily("")))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Server.CORS.AllowedOrigins) != 0 {
		t.Errorf("allowed_origins = %v, want none (no CORS headers by default)", c.Server.CORS.AllowedOrigins)
	}
	if c.Server.CORS.MaxAge != 10*time.Minute {
		t.Errorf("max_age = %s, want 10m", c.Server.CORS.MaxAge)
	}
	if c.Auth.Tickets.TTL != time.Minute {
		t.Errorf("auth.tickets.ttl = %s, want 1m", c.Auth.Tickets.TTL)
	}
}

func TestBrowserKeysValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		yaml    string
		origins []string
		maxAge  time.Duration
		ttl     time.Duration
	}{
		{"origins and max_age", "server:\n  cors:\n    allowed_origins: [\"https://play.example.com\", \"http://localhost:3000\"]\n    max_age: 1h\n",
			[]string{"https://play.example.com", "http://localhost:3000"}, time.Hour, time.Minute},
		{"ipv6 and ipv4 hosts", "server:\n  cors:\n    allowed_origins: [\"http://[::1]:8080\", \"http://[::1]\", \"https://10.0.0.1:8443\"]\n",
			[]string{"http://[::1]:8080", "http://[::1]", "https://10.0.0.1:8443"}, 10 * time.Minute, time.Minute},
		{"max_age 0: no caching of preflights", "server:\n  cors:\n    max_age: 0s\n", nil, 0, time.Minute},
		{"max_age 24h", "server:\n  cors:\n    max_age: 24h\n", nil, 24 * time.Hour, time.Minute},
		{"ticket ttl 1s", "auth:\n  tickets:\n    ttl: 1s\n", nil, 10 * time.Minute, time.Second},
		{"ticket ttl 10m", "auth:\n  tickets:\n    ttl: 10m\n", nil, 10 * time.Minute, 10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(tt.yaml + withFamily("")))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Server.CORS.AllowedOrigins, tt.origins) {
				t.Errorf("allowed_origins = %q, want %q", c.Server.CORS.AllowedOrigins, tt.origins)
			}
			if c.Server.CORS.MaxAge != tt.maxAge {
				t.Errorf("max_age = %s, want %s", c.Server.CORS.MaxAge, tt.maxAge)
			}
			if c.Auth.Tickets.TTL != tt.ttl {
				t.Errorf("ttl = %s, want %s", c.Auth.Tickets.TTL, tt.ttl)
			}
		})
	}
}

func TestBrowserKeysErrors(t *testing.T) {
	t.Parallel()
	origins := func(list string) string { return "server:\n  cors:\n    allowed_origins: " + list + "\n" }
	const o0 = "server.cors.allowed_origins[0]"
	tests := []struct {
		name string
		yaml string
		key  string
		msg  string
	}{
		{"wildcard", origins(`["*"]`), o0, "wildcards are not allowed"},
		{"wildcard subdomain", origins(`["https://*.example.com"]`), o0, "wildcards are not allowed"},
		{"trailing slash", origins(`["https://play.example.com/"]`), o0, "without a path"},
		{"path", origins(`["https://play.example.com/app"]`), o0, "without a path"},
		{"query", origins(`["https://play.example.com?x=1"]`), o0, "without a path"},
		{"user info", origins(`["https://u@play.example.com"]`), o0, "without a path"},
		{"no scheme", origins(`["play.example.com"]`), o0, "want http://host[:port]"},
		{"other scheme", origins(`["ftp://play.example.com"]`), o0, "want http://host[:port]"},
		{"no host", origins(`["https://"]`), o0, "has no host"},
		{"only a port", origins(`["https://:8443"]`), o0, "has no host"},
		{"upper case", origins(`["https://Play.example.com"]`), o0, "lower case"},
		{"default port", origins(`["https://play.example.com:443"]`), o0, "default port 443"},
		{"port 0", origins(`["http://localhost:0"]`), o0, "not 1..65535"},
		{"port not a number", origins(`["http://localhost:http"]`), o0, "not 1..65535"},
		{"port with a leading zero", origins(`["http://localhost:08080"]`), o0, "not written as browsers write it"},
		{"empty port", origins(`["http://localhost:"]`), o0, "not 1..65535"},
		{"duplicate", origins(`["https://a.example", "https://a.example"]`), "server.cors.allowed_origins[1]", "duplicate origin"},
		{"not a list", origins(`"https://a.example"`), "server.cors.allowed_origins", "expected a list"},
		{"unknown cors key", "server:\n  cors:\n    allow_origins: []\n", "server.cors.allow_origins", "unknown key"},
		{"max_age negative", "server:\n  cors:\n    max_age: -1s\n", "server.cors.max_age", "out of range 0..24h0m0s"},
		{"max_age over a day", "server:\n  cors:\n    max_age: 25h\n", "server.cors.max_age", "out of range"},
		{"ticket ttl 0", "auth:\n  tickets:\n    ttl: 0s\n", "auth.tickets.ttl", "out of range 1s..10m0s"},
		{"ticket ttl 500ms", "auth:\n  tickets:\n    ttl: 500ms\n", "auth.tickets.ttl", "out of range"},
		{"ticket ttl 11m", "auth:\n  tickets:\n    ttl: 11m\n", "auth.tickets.ttl", "out of range"},
		{"ticket ttl not a duration", "auth:\n  tickets:\n    ttl: 60\n", "auth.tickets.ttl", "invalid duration"},
		{"unknown tickets key", "auth:\n  tickets:\n    max: 10\n", "auth.tickets.max", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml + withFamily("")))
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

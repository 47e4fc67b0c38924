package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/testnet"
)

// TestHealthcheck: the image's HEALTHCHECK command succeeds on a 200 and
// fails, saying why, on anything else or on no answer.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	serve := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"status":"x"}`))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closedURL := "http://" + testnet.RefusingAddr(t)
	tests := []struct {
		title   string
		args    []string
		env     map[string]string
		wantErr string // "" : healthy
	}{
		{"200", []string{"-url", serve(200) + "/healthz"}, nil, ""},
		{"URL from the environment", nil, map[string]string{"RANKGATE_HEALTHCHECK_URL": serve(200) + "/healthz"}, ""},
		{"503", []string{"-url", serve(503) + "/healthz"}, nil, "503"},
		{"wrong path", []string{"-url", serve(200) + "/nope"}, nil, "404"},
		{"nothing listening", []string{"-url", closedURL + "/healthz"}, nil, "connect"},
		{"stray argument", []string{"-url", serve(200) + "/healthz", "extra"}, nil, "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string { return tc.env[k] }
			err := run(context.Background(), append([]string{"healthcheck"}, tc.args...), getenv, &stdout, &stderr)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("healthcheck failed: %v", err)
			case tc.wantErr == "" && !strings.Contains(stdout.String(), "healthy"):
				t.Errorf("stdout = %q, want a healthy line", stdout.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

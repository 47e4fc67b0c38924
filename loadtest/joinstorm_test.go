package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTournaments is a gateway that answers the join storm: /healthz,
// create and cancel, and joins that let the first admit members of a
// tournament in and answer tournament_full after.
func fakeTournaments(t *testing.T, admit int) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	in := map[string]map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz" || r.URL.Path == "/readyz":
			_, _ = io.WriteString(w, "ok")
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tournaments":
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{}`)
		case r.Method == http.MethodDelete:
			_, _ = io.WriteString(w, `{}`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/join"):
			var body struct {
				User string `json:"user"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.User == "" {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"code":"bad_request","message":"user"}}`)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			m := in[r.URL.Path]
			if m == nil {
				m = map[string]bool{}
				in[r.URL.Path] = m
			}
			if !m[body.User] && len(m) >= admit {
				w.WriteHeader(http.StatusConflict)
				_, _ = io.WriteString(w, `{"error":{"code":"tournament_full","message":"full"}}`)
				return
			}
			joined := !m[body.User]
			m[body.User] = true
			fmt.Fprintf(w, `{"joined":%v,"size":%d,"period":"p"}`, joined, len(m))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestJoinStormClients: both clients run the storm and its yardsticks and
// count the answers alike; a storm that lets one too many in fails the run.
func TestJoinStormClients(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, client string
		admit        int
		wantErr      string
	}{
		{"transport", ClientTransport, 10, ""},
		{"conn", ClientConn, 10, ""},
		{"transport, one too many in", ClientTransport, 11, "11 joined and 49 full"},
		{"conn, one too many in", ClientConn, 11, "11 joined and 49 full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeTournaments(t, tc.admit)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := t.TempDir()
			var out strings.Builder
			err := runJoinStorm(ctx, srv.URL, tc.client, 10*time.Second, joinStormFlags{n: 60, storms: 2, maxSize: 10}, dir, &out, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(out.String(), "     10    50 "); got != 2 {
				t.Fatalf("want 2 storms of 10 joined and 50 full:\n%s", out.String())
			}
		})
	}
}

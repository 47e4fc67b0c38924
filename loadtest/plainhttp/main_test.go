package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Every request but GET /readyz gets the body, as a cached read's answer.
func TestHandler(t *testing.T) {
	t.Parallel()
	body := []byte(`{"board":"w16/2026-W49/national","source":"cache","entries":[]}` + "\n")
	h := handler(body, newPusher(body))
	for _, tc := range []struct {
		name, path, want, cacheControl string
	}{
		{"readyz", "/readyz", `{"status":"ready"}` + "\n", ""},
		{"a top", "/v1/boards/w16/current/national/top?consistency=cached&limit=100", string(body), "max-age=1"},
		{"any path", "/x", string(body), "max-age=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			res := rec.Result()
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || string(got) != tc.want ||
				res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Cache-Control") != tc.cacheControl ||
				res.ContentLength != int64(len(tc.want)) {
				t.Fatalf("%d %q %v", res.StatusCode, got, res.Header)
			}
		})
	}
}

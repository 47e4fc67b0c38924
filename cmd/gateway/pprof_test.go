package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServePprof: -pprof serves Go's profiler on its own listener — the
// index lists the profiles, a heap profile answers — and stop closes it.
func TestServePprof(t *testing.T) {
	t.Parallel()
	addr, stop, err := servePprof("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, c := range []struct{ path, want string }{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/heap?debug=1", "heap profile"},
		{"/debug/pprof/cmdline", ""},
	} {
		resp, err := hc.Get("http://" + addr + c.path)
		if err != nil {
			t.Fatalf("GET %s: %v", c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), c.want) {
			t.Fatalf("GET %s: %d %.200q, want 200 with %q", c.path, resp.StatusCode, body, c.want)
		}
	}
	stop()
	if resp, err := hc.Get("http://" + addr + "/debug/pprof/"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET after stop: %d, want a refused connection", resp.StatusCode)
	}
	if _, _, err := servePprof("256.0.0.1:1", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "-pprof") {
		t.Fatalf("bad address: err %v, want one naming -pprof", err)
	}
}

package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/teststack"
)

// A cached Top-N answered from the cache (bytes encoded once per cached
// value) is the answer the load made, marked as from the cache: the same
// entries, a newline-ended JSON body, its exact Content-Length, JSON and a
// max-age no longer than the TTL — on every hit alike.
func TestCachedHitAnswer(t *testing.T) {
	t.Parallel()
	st := teststack.New(t, teststack.Options{Families: benchFamilies})
	srv := httptest.NewServer(st.Handler)
	t.Cleanup(srv.Close)
	writeBatch := `{"events":[{"event_id":"a","family":"w16","user":"u1","delta":5,"dims":{"province":"p1","class":"c1"}},` +
		`{"event_id":"b","family":"w16","user":"u2","delta":9,"dims":{"province":"p1","class":"c2"}}]}`
	resp, err := http.Post(srv.URL+"/v1/events:batch", "application/json", strings.NewReader(writeBatch))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d", resp.StatusCode)
	}
	type page struct {
		Source  string            `json:"source"`
		AsOf    string            `json:"as_of"`
		Entries []json.RawMessage `json:"entries"`
	}
	get := func(t *testing.T) (page, *http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/boards/w16/current/national/top?consistency=cached&limit=10")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("top: %d %s", resp.StatusCode, body)
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("top: %v: %s", err, body)
		}
		return p, resp, body
	}
	first, _, _ := get(t)
	if len(first.Entries) != 2 {
		t.Fatalf("first read: %d entries, want 2", len(first.Entries))
	}
	var hits [][]byte
	for range 3 {
		p, resp, body := get(t)
		if p.Source != "cache" {
			continue // the 1 s entry expired in between: a load, or a stale copy
		}
		if body[len(body)-1] != '\n' {
			t.Fatalf("hit body does not end in a newline: %q", body)
		}
		if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
			t.Fatalf("Content-Length %s, body %d bytes", got, len(body))
		}
		if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "application/json" ||
			(cc != "max-age=1" && cc != "no-store") {
			t.Fatalf("hit headers: Content-Type %q, Cache-Control %q", ct, cc)
		}
		if len(p.Entries) != len(first.Entries) {
			t.Fatalf("hit: %d entries, the load %d", len(p.Entries), len(first.Entries))
		}
		for i := range p.Entries {
			if string(p.Entries[i]) != string(first.Entries[i]) && p.AsOf == first.AsOf {
				t.Fatalf("hit entry %d %s, the load's %s", i, p.Entries[i], first.Entries[i])
			}
		}
		hits = append(hits, body)
	}
	if len(hits) == 0 {
		t.Fatal("no read was a cache hit")
	}
}

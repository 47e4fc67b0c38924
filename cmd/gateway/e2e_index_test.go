package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/soon"
)

// TestE2EIndex: a family with index.enabled answers its reads from the
// gateway's read index once the board is loaded and caught up — source
// index, lag_ms, as_of — with the same entries, positions and ranks as the
// masters; reads without a consistency use it too; consistency=primary
// never does. Writes made after the board entered the index reach it
// through the change feeds.
func TestE2EIndex(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	const b = "/v1/boards/indexed/all/national"
	write := func(from, to int) time.Time {
		t.Helper()
		var events []map[string]any
		for i := from; i < to; i++ {
			events = append(events, map[string]any{"event_id": fmt.Sprintf("ix-%d", i), "family": "indexed",
				"user": fmt.Sprintf("m%03d", i%80), "delta": 1 + i%5})
		}
		var res struct {
			Results []map[string]any `json:"results"`
		}
		g.ok(t, "POST", "/v1/events:batch", map[string]any{"events": events}, &res)
		for i, r := range res.Results {
			if _, failed := r["error"]; failed {
				t.Fatalf("event %d: %v", from+i, r)
			}
		}
		return time.Now()
	}
	// caughtUp waits until the board answers from the index as of since.
	caughtUp := func(since time.Time) {
		t.Helper()
		soon.Eventually(t, 30*time.Second, func() error {
			var c countRes
			g.ok(t, "GET", b+"/count?min=-100000&max=100000&consistency=index", nil, &c)
			if c.Source != "index" {
				return fmt.Errorf("source %s, not index yet", c.Source)
			}
			at, err := time.Parse(time.RFC3339Nano, c.AsOf)
			if err != nil {
				t.Fatalf("as_of %q: %v", c.AsOf, err)
			}
			if at.Before(since) {
				return fmt.Errorf("index as of %s, before %s", at, since)
			}
			return nil
		})
	}
	indexed := func(what string, m readMeta) {
		t.Helper()
		if m.Source != "index" || m.LagMs == nil || *m.LagMs < 0 || m.Board != "indexed/all/national" {
			t.Fatalf("%s: %+v, want source index with lag_ms", what, m)
		}
	}
	same := func(what string, got, want []entry) {
		t.Helper()
		if !slices.EqualFunc(got, want, sameEntry) {
			t.Fatalf("%s from the index:\n%+v\nfrom the masters:\n%+v", what, got, want)
		}
	}
	compare := func() {
		t.Helper()
		var a, p page
		g.ok(t, "GET", b+"/top?limit=100&consistency=index", nil, &a)
		indexed("top", a.readMeta)
		g.ok(t, "GET", b+"/top?limit=100&consistency=primary", nil, &p)
		if p.Source != "primary" || p.LagMs != nil {
			t.Fatalf("consistency=primary on an indexed family: %+v", p.readMeta)
		}
		same("top", a.Entries, p.Entries)
		if len(a.Entries) != 80 {
			t.Fatalf("top: %d entries, want 80", len(a.Entries))
		}
		g.ok(t, "GET", b+"/top?limit=100", nil, &a)
		indexed("top without consistency", a.readMeta)
		same("top without consistency", a.Entries, p.Entries)
		for _, u := range []string{"m000", "m041", "m079"} {
			var si, sp standing
			g.ok(t, "GET", b+"/members/"+u+"?consistency=index", nil, &si)
			indexed("member", si.readMeta)
			g.ok(t, "GET", b+"/members/"+u+"?consistency=primary", nil, &sp)
			if si.Points != sp.Points || si.Position != sp.Position || si.Rank != sp.Rank || si.Members != sp.Members || si.Percentile != sp.Percentile {
				t.Fatalf("member %s from the index %+v, from the masters %+v", u, si, sp)
			}
			g.ok(t, "GET", b+"/members/"+u+"/around?radius=3&consistency=index", nil, &a)
			indexed("around", a.readMeta)
			g.ok(t, "GET", b+"/members/"+u+"/around?radius=3&consistency=primary", nil, &p)
			same("around "+u, a.Entries, p.Entries)
		}
		g.ok(t, "GET", b+"/entries?offset=30&limit=20&consistency=index", nil, &a)
		indexed("offset page", a.readMeta)
		g.ok(t, "GET", b+"/entries?offset=30&limit=20&consistency=primary", nil, &p)
		same("offset page", a.Entries, p.Entries)
		g.ok(t, "GET", b+"/entries?limit=7&consistency=index", nil, &a)
		indexed("cursor page", a.readMeta)
		g.ok(t, "GET", b+"/entries?limit=7&consistency=primary", nil, &p)
		same("first cursor page", a.Entries, p.Entries)
		if a.NextCursor == "" || a.NextCursor != p.NextCursor {
			t.Fatalf("cursors differ: index %q, masters %q", a.NextCursor, p.NextCursor)
		}
		g.ok(t, "GET", b+"/entries?limit=7&consistency=index&cursor="+a.NextCursor, nil, &a)
		g.ok(t, "GET", b+"/entries?limit=7&consistency=primary&cursor="+p.NextCursor, nil, &p)
		same("second cursor page", a.Entries, p.Entries)
		var ci, cp countRes
		g.ok(t, "GET", b+"/count?min=10&max=20&consistency=index", nil, &ci)
		indexed("count", ci.readMeta)
		g.ok(t, "GET", b+"/count?min=10&max=20&consistency=primary", nil, &cp)
		if ci.Count != cp.Count {
			t.Fatalf("count: index %d, masters %d", ci.Count, cp.Count)
		}
		g.ok(t, "GET", b+"/range?min=10&max=20&limit=50&consistency=index", nil, &a)
		indexed("range", a.readMeta)
		g.ok(t, "GET", b+"/range?min=10&max=20&limit=50&consistency=primary", nil, &p)
		same("range", a.Entries, p.Entries)
		lookup := map[string]any{"users": []string{"m005", "m050", "nobody", "m013"}}
		g.ok(t, "POST", b+"/members:lookup?consistency=index", lookup, &a)
		indexed("lookup", a.readMeta)
		g.ok(t, "POST", b+"/members:lookup?consistency=primary", lookup, &p)
		same("lookup", a.Entries, p.Entries)
	}

	since := write(0, 300)
	caughtUp(since) // the first read loads the board
	compare()
	// Later writes reach the loaded index through the change feeds.
	since = write(300, 700)
	caughtUp(since)
	compare()
	g.wantErr(t, "GET", b+"/members/nobody?consistency=index", nil, 404, "not_ranked", "-")
	g.wantErr(t, "GET", b+"/top?consistency=indexed", nil, 400, "invalid_argument", "consistency")
	// A family without an index: consistency=index falls back to the read's
	// default, and the source says so.
	var p page
	g.ok(t, "GET", "/v1/boards/game/current/national/top?limit=3&consistency=index", nil, &p)
	if p.Source == "index" || p.LagMs != nil {
		t.Fatalf("consistency=index on a family without an index: %+v", p.readMeta)
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeBatchServer answers /v1/events:batch with per-item outcomes chosen by
// answer(call, event ids).
func fakeBatchServer(t *testing.T, answer func(call int, ids []string) (status int, items []string)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Events []struct {
				EventID string `json:"event_id"`
			} `json:"events"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("bad batch body: %v", err)
		}
		ids := make([]string, len(req.Events))
		for i, e := range req.Events {
			ids[i] = e.EventID
		}
		status, items := answer(int(calls.Add(1)), ids)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"results":[`+strings.Join(items, ",")+`]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func okItem(id string) string { return `{"event_id":"` + id + `","duplicate":false}` }

func errItem(code string) string { return `{"error":{"code":"` + code + `","message":"x"}}` }

func TestPostBatchRetriesUnavailableItemsOnly(t *testing.T) {
	var second []string
	srv, calls := fakeBatchServer(t, func(call int, ids []string) (int, []string) {
		var items []string
		for i, id := range ids {
			switch {
			case call == 1 && i == 1:
				items = append(items, errItem("unavailable"))
			case call == 1 && i == 2:
				items = append(items, errItem("out_of_range")) // permanent: not retried
			default:
				items = append(items, okItem(id))
			}
		}
		if call == 2 {
			second = ids
		}
		return 200, items
	})
	w := testWorld(t, nil)
	failed, err := postBatch(context.Background(), srv.Client(), srv.URL, prefillEvents(w, 0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if failed != 1 || calls.Load() != 2 {
		t.Errorf("failed %d after %d calls, want 1 after 2", failed, calls.Load())
	}
	if len(second) != 1 || second[0] != "pf.lt.1" {
		t.Errorf("second call sent %v, want only the unavailable event", second)
	}
}

func TestPostBatchRetries503(t *testing.T) {
	srv, calls := fakeBatchServer(t, func(call int, ids []string) (int, []string) {
		if call == 1 {
			return 503, nil
		}
		items := make([]string, len(ids))
		for i, id := range ids {
			items[i] = okItem(id)
		}
		return 200, items
	})
	w := testWorld(t, nil)
	failed, err := postBatch(context.Background(), srv.Client(), srv.URL, prefillEvents(w, 10, 13))
	if err != nil || failed != 0 || calls.Load() != 2 {
		t.Errorf("failed %d, err %v, calls %d", failed, err, calls.Load())
	}
}

func TestPostBatchRefusal(t *testing.T) {
	srv, _ := fakeBatchServer(t, func(int, []string) (int, []string) { return 400, nil })
	w := testWorld(t, nil)
	if _, err := postBatch(context.Background(), srv.Client(), srv.URL, prefillEvents(w, 0, 2)); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("err = %v, want the 400", err)
	}
}

func TestPrefillEvents(t *testing.T) {
	w := testWorld(t, nil)
	evs := prefillEvents(w, 5, 8)
	if len(evs) != 3 {
		t.Fatalf("%d events", len(evs))
	}
	var batch struct {
		Events []struct {
			EventID string            `json:"event_id"`
			User    string            `json:"user"`
			Delta   int64             `json:"delta"`
			Dims    map[string]string `json:"dims"`
		} `json:"events"`
	}
	if err := json.Unmarshal(batchBody(evs), &batch); err != nil {
		t.Fatal(err)
	}
	for j, e := range batch.Events {
		i := 5 + j
		if e.EventID != prefillEventID("lt", i) || e.User != w.MemberName(int32(i)) || e.Delta < 1 || e.Delta > w.sc.Prefill.PointsMax {
			t.Errorf("event %d: %+v", i, e)
		}
		b := w.MemberBoards(int32(i), nil)
		if e.Dims["province"] != w.boards[b[1]].Value || e.Dims["class"] != w.boards[b[2]].Value {
			t.Errorf("event %d dims %v, member boards %v", i, e.Dims, b)
		}
	}
	if s := progressBar(50, 100, 0, time.Second); !strings.Contains(s, " 50.0%") || !strings.Contains(s, "50/100") {
		t.Errorf("progress bar %q", s)
	}
}

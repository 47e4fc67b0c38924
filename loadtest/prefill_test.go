package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rankgate/rankgate/client"
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

func testClient(t *testing.T, srv *httptest.Server) *client.Client {
	t.Helper()
	c, err := prefillClient(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
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
	failed, err := postBatch(context.Background(), testClient(t, srv), prefillEvents(w, 0, 4))
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
	failed, err := postBatch(context.Background(), testClient(t, srv), prefillEvents(w, 10, 13))
	if err != nil || failed != 0 || calls.Load() != 2 {
		t.Errorf("failed %d, err %v, calls %d", failed, err, calls.Load())
	}
}

func TestPostBatchRefusal(t *testing.T) {
	srv, _ := fakeBatchServer(t, func(int, []string) (int, []string) { return 400, nil })
	w := testWorld(t, nil)
	if _, err := postBatch(context.Background(), testClient(t, srv), prefillEvents(w, 0, 2)); err == nil || !strings.Contains(err.Error(), "400") {
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

// fakeWriter records the events of every batch it accepts; fail decides,
// per call, the error to answer instead.
type fakeWriter struct {
	mu    sync.Mutex
	tries map[uint64]int // a batch (its first event number) → calls of it
	// fail answers a batch's try (1 for its first call) with an error, or nil.
	fail  func(try int) error
	ids   map[string]int64 // event id → points
	users map[string]int   // member → events
}

func (f *fakeWriter) events(_ context.Context, op *Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tries == nil {
		f.tries = map[uint64]int{}
	}
	f.tries[op.Event]++
	if f.fail != nil {
		if err := f.fail(f.tries[op.Event]); err != nil {
			return err
		}
	}
	for j, u := range op.Users {
		f.ids[eventID(op.Prefix, op.Event+uint64(j))] = op.Deltas[j]
		f.users["lt"+strconv.Itoa(int(u))]++
	}
	return nil
}

func TestDirectPrefill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fail    func(call int) error
		wantErr string
	}{
		{name: "clean"},
		{name: "transient errors are retried", fail: func(try int) error {
			if try <= 2 { // every batch fails twice, then goes in
				return errors.New("i/o timeout")
			}
			return nil
		}},
		{name: "a frozen period stops the prefill", fail: func(int) error { return errStatus("closed") }, wantErr: "refused"},
		{name: "a dead cluster gives up", fail: func(int) error { return errors.New("connection refused") }, wantErr: "gave up after 6 attempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := testWorld(t, func(sc *Scenario) {
				sc.Prefill = Prefill{Members: 1000, From: 10, Batch: 64, Concurrency: 3, PointsMax: 50}
			})
			fw := &fakeWriter{fail: tt.fail, ids: map[string]int64{}, users: map[string]int{}}
			st, err := prefill(context.Background(), w, io.Discard, time.Minute, directSend(w, fw, time.Microsecond))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Events != 990 || st.Failed != 0 {
				t.Errorf("stats %+v, want 990 events, 0 failed", st)
			}
			// Every member of [10, 1000) once, with the HTTP prefill's event
			// id and points (so the two are interchangeable).
			if len(fw.users) != 990 || len(fw.ids) != 990 {
				t.Fatalf("%d members, %d event ids; want 990 each", len(fw.users), len(fw.ids))
			}
			for i := 10; i < 1000; i++ {
				if n := fw.users["lt"+strconv.Itoa(i)]; n != 1 {
					t.Fatalf("member %d: %d events, want 1", i, n)
				}
				if p, ok := fw.ids[prefillEventID("lt", i)]; !ok || p != prefillPoints(i, 50) {
					t.Fatalf("member %d: event %q points %d (found %v), want %d", i, prefillEventID("lt", i), p, ok, prefillPoints(i, 50))
				}
			}
		})
	}
}

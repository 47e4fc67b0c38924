package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/workload"
)

func testWorld(t *testing.T, mutate func(sc *Scenario)) *World {
	t.Helper()
	sc := DefaultScenario()
	sc.Members = 2000
	if mutate != nil {
		mutate(&sc)
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorld(&sc, "delta")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWorldAssignsEveryMemberOneBoardPerDimension(t *testing.T) {
	w := testWorld(t, nil)
	if len(w.boards) != 1+8+50 {
		t.Fatalf("%d boards", len(w.boards))
	}
	total := 0
	for b := 1; b < len(w.boards); b++ {
		total += len(w.onBoard[b])
	}
	if total != 2*w.sc.Members {
		t.Errorf("members on dimension boards: %d, want %d", total, 2*w.sc.Members)
	}
	if p0, p7 := len(w.onBoard[1]), len(w.onBoard[8]); p0 <= p7 {
		t.Errorf("board skew: province p0 has %d members, p7 %d", p0, p7)
	}
	// The same scenario gives the same assignment (prefill and later runs agree).
	w2 := testWorld(t, func(sc *Scenario) { sc.Seed = 99 })
	for i := range int32(100) {
		a, b := w.MemberBoards(i, nil), w2.MemberBoards(i, nil)
		if len(a) != 3 || a[0] != 0 || a[1] != b[1] || a[2] != b[2] {
			t.Fatalf("member %d: %v vs %v", i, a, b)
		}
		if w.boards[a[1]].Type != workload.BoardProvince || w.boards[a[2]].Type != workload.BoardClass {
			t.Fatalf("member %d boards %v", i, a)
		}
	}
}

func TestGenRespectsMixAndBoards(t *testing.T) {
	w := testWorld(t, func(sc *Scenario) {
		sc.Ops = []workload.OpSpec{workload.Op(workload.OpBatch, 1), workload.Op(workload.OpMember, 1), workload.Op(workload.OpLookup, 1), workload.Op(workload.OpPage, 1)}
		sc.Ops[1].Board = workload.BoardProvince
	})
	sh := newShared("run1")
	g := NewGen(w, 1, 0, sh)
	counts := map[string]int{}
	for range 4000 {
		op := g.Next()
		counts[op.Kind]++
		switch op.Kind {
		case workload.OpBatch:
			if len(op.Users) != 100 || len(op.Deltas) != 100 || op.Prefix != "run1" {
				t.Fatalf("batch: %+v", op)
			}
			for _, d := range op.Deltas {
				if d < 1 || d > w.sc.DeltaMax {
					t.Fatalf("delta %d", d)
				}
			}
		case workload.OpMember:
			if w.boards[op.Board].Type != workload.BoardProvince {
				t.Fatalf("member read on %+v", w.boards[op.Board])
			}
			if got := w.MemberBoards(op.Users[0], nil)[1]; got != op.Board {
				t.Fatalf("member %d is not on board %d", op.Users[0], op.Board)
			}
		case workload.OpLookup:
			if len(op.Users) != 20 {
				t.Fatalf("lookup of %d", len(op.Users))
			}
		}
	}
	for _, k := range []string{workload.OpBatch, workload.OpMember, workload.OpLookup, workload.OpPage} {
		if counts[k] < 800 || counts[k] > 1200 {
			t.Errorf("%s drawn %d times of 4000 at weight 1/4", k, counts[k])
		}
	}
	if n := sh.events.Load(); n != uint64(100*counts[workload.OpBatch]) {
		t.Errorf("event counter %d, want %d", n, 100*counts[workload.OpBatch])
	}
}

func TestHTTPTargets(t *testing.T) {
	w := testWorld(t, func(sc *Scenario) {
		sc.Ops = []workload.OpSpec{workload.Op(workload.OpEvent, 1), workload.Op(workload.OpBatch, 1), workload.Op(workload.OpTop, 1), workload.Op(workload.OpPage, 1), workload.Op(workload.OpLookup, 1), workload.Op(workload.OpAround, 1)}
		sc.Ops[1].Batch = 3
		sc.Ops[2].Consistency = "primary"
	})
	api := newHTTPAPI(w)
	op := Op{Spec: 0, Kind: workload.OpEvent, Users: []int32{42}, Deltas: []int64{7}, Event: 5, Prefix: "rX"}
	tg := api.Target(&op)
	if tg.Method != "POST" || tg.URL != "http://127.0.0.1:8080/v1/events#0.0" {
		t.Errorf("event target %s %s", tg.Method, tg.URL)
	}
	var ev map[string]any
	if err := json.Unmarshal(tg.Body, &ev); err != nil {
		t.Fatalf("event body %s: %v", tg.Body, err)
	}
	dims, _ := ev["dims"].(map[string]any)
	if ev["event_id"] != "rX.5" || ev["user"] != "lt42" || ev["delta"] != float64(7) || ev["family"] != "learning" || len(dims) != 2 {
		t.Errorf("event body %s", tg.Body)
	}
	op = Op{Spec: 1, Kind: workload.OpBatch, Users: []int32{1, 2, 3}, Deltas: []int64{1, 2, 3}, Event: 10, Prefix: "rX"}
	var batch struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(api.Target(&op).Body, &batch); err != nil || len(batch.Events) != 3 || batch.Events[2]["event_id"] != "rX.12" {
		t.Errorf("batch body: %v %+v", err, batch)
	}
	op = Op{Spec: 2, Kind: workload.OpTop, Board: 1}
	tg = api.Target(&op)
	u, err := url.Parse(tg.URL)
	if err != nil || u.Path != "/v1/boards/learning/current/province:p0/top" || u.Query().Get("limit") != "100" ||
		u.Query().Get("consistency") != "primary" || u.Fragment != "2.1" {
		t.Errorf("top target %s", tg.URL)
	}
	op = Op{Spec: 3, Kind: workload.OpPage, Board: 0, Cursor: "abc_-"}
	if tg = api.Target(&op); !strings.Contains(tg.URL, "/national/entries?cursor=abc_-&limit=50#3.0") {
		t.Errorf("page target %s", tg.URL)
	}
	op = Op{Spec: 4, Kind: workload.OpLookup, Board: 0, Users: []int32{1, 2}}
	if tg = api.Target(&op); tg.Method != "POST" || string(tg.Body) != `{"users":["lt1","lt2"]}` {
		t.Errorf("lookup target %s %s", tg.Method, tg.Body)
	}
	op = Op{Spec: 5, Kind: workload.OpAround, Board: 0, Users: []int32{9}}
	if tg = api.Target(&op); !strings.Contains(tg.URL, "/national/members/lt9/around?radius=5#5.0") {
		t.Errorf("around target %s", tg.URL)
	}
	if s, b, ok := parseTag(tg.URL); !ok || s != 5 || b != 0 {
		t.Errorf("parseTag(%s) = %d %d %v", tg.URL, s, b, ok)
	}
}

func TestHTTPOutcome(t *testing.T) {
	tests := []struct {
		kind string
		code int
		body string
		err  string
		want string
	}{
		{workload.OpTop, 200, `{"entries":[]}`, "", ""},
		{workload.OpMember, 404, `{"error":{"code":"not_ranked"}}`, "", "404"},
		{workload.OpTop, 503, "", "", "503"},
		{workload.OpBatch, 200, `{"results":[{"event_id":"a"},{"error":{"code":"out_of_range"}}]}`, "", "item_error"},
		{workload.OpBatch, 200, `{"results":[{"event_id":"a"}]}`, "", ""},
		{workload.OpTop, 0, "", "Get \"http://x\": context deadline exceeded (Client.Timeout exceeded)", "timeout"},
		{workload.OpTop, 0, "", "dial tcp 127.0.0.1:8080: connect: connection refused", "conn_refused"},
	}
	for _, tt := range tests {
		if got := httpOutcome(tt.kind, tt.code, []byte(tt.body), tt.err); got != tt.want {
			t.Errorf("httpOutcome(%s, %d, %q) = %q, want %q", tt.kind, tt.code, tt.err, got, tt.want)
		}
	}
	if c := nextCursor([]byte(`{"entries":[],"next_cursor":"AQAB_-x"}`)); c != "AQAB_-x" {
		t.Errorf("nextCursor = %q", c)
	}
	if c := nextCursor([]byte(`{"entries":[]}`)); c != "" {
		t.Errorf("nextCursor without one = %q", c)
	}
}

func TestCursorPools(t *testing.T) {
	p := newCursorPools()
	if p.take(1) != nil {
		t.Fatal("empty pool gave a cursor")
	}
	for i := range cursorPoolSize + 10 {
		p.put(1, i)
	}
	if got := p.take(1); got != cursorPoolSize+9 {
		t.Errorf("take = %v, want the newest", got)
	}
	if p.take(2) != nil {
		t.Error("pools are per board")
	}
}

// TestEventsCarryColumns: on a family with sort columns every event (load
// and prefill) carries a value for each column, the same for the same id,
// within [0, max].
func TestEventsCarryColumns(t *testing.T) {
	w := testWorld(t, nil)
	w.cols = []rank.Column{{Name: "time_ms", Asc: true, Max: 86400000}, {Name: "kills", Max: 5}}
	h := newHTTPAPI(w)
	op := &Op{Kind: workload.OpEvent, Prefix: "ev.x", Event: 7, Users: []int32{3}, Deltas: []int64{2}}
	var ev struct {
		EventID string           `json:"event_id"`
		Columns map[string]int64 `json:"columns"`
	}
	if err := json.Unmarshal(h.appendEvent(nil, op, 0), &ev); err != nil {
		t.Fatal(err)
	}
	want := w.ColumnValues(ev.EventID)
	if len(ev.Columns) != 2 || ev.Columns["time_ms"] != want[0] || ev.Columns["kills"] != want[1] || want[1] > 5 || want[0] > 999 {
		t.Fatalf("event %s columns %v, want %v", ev.EventID, ev.Columns, want)
	}
	var pf struct {
		Columns map[string]int64 `json:"columns"`
	}
	if err := json.Unmarshal(prefillEvents(w, 5, 6)[0], &pf); err != nil || len(pf.Columns) != 2 {
		t.Fatalf("prefill event: %v %v", pf.Columns, err)
	}
	w.cols = nil
	if b := h.appendEvent(nil, op, 0); strings.Contains(string(b), "columns") {
		t.Fatalf("a family without columns: %s", b)
	}
}

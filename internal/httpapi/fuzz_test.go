package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// FuzzEventJSON drives POST /v1/events and /v1/events:batch with arbitrary
// bodies through the strict decoder and a fake service: nothing panics, no
// input is a 5xx, and every answer is one JSON value (the error shape when
// it is not a 200).
func FuzzEventJSON(f *testing.F) {
	for _, s := range []string{
		`{"event_id":"evt-1","family":"learning","user":"u42","delta":20,"dims":{"province":"zhejiang","class":"c3"}}`,
		`{"event_id":"evt-2","family":"learning","user":"u42","reverses":"evt-1","reason":"fraud","dims":{"province":"zhejiang"}}`,
		`{"event_id":"b1","family":"game","user":"p1","value":900,"at":"2026-08-20T10:00:00+08:00"}`,
		`{"event_id":"e","family":"f","user":"u","delta":9223372036854775808}`,
		`{"event_id":"e","family":"f","user":"u","delta":1e3}`,
		`{"event_id":"e","family":"f","user":"u","delta":NaN}`,
		`{"event_id":"e","at":"2026-08-20 10:00:00 08:00"}`,
		`{"event_id":"e","at":12}`,
		`{"dims":{"a":1}}`,
		`{"dims":[]}`,
		`{"delta":"5"}`,
		`{"unknown":true}`,
		`{"Event":{"event_id":"x"}}`,
		`{"event_id":"a"}{"event_id":"b"}`,
		`{"event_id":"a",`,
		`{"events":[{"event_id":"a","delta":1},{"event_id":"b","delta":NaN}]}`,
		`{"events":[null,1,"x",[]]}`,
		`{"events":null}`,
		`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`,
		`null`, ``, ` `, `"\ud800"`, "{\"event_id\":\"\xff\"}", "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(s))
	}
	svc := &fakeService{
		applyEvent: func(_ context.Context, ev gateway.Event) (gateway.EventResult, error) {
			return fakeApply(ev)
		},
		applyBatch: func(_ context.Context, evs []gateway.Event) ([]gateway.BatchItem, error) {
			items := make([]gateway.BatchItem, len(evs))
			for i, ev := range evs {
				res, err := fakeApply(ev)
				items[i] = gateway.BatchItem{Result: &res, Err: err}
				if err != nil {
					items[i].Result = nil
				}
			}
			return items, nil
		},
	}
	h, err := New(svc, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, req := range []struct{ target, body string }{
			{"/v1/events", string(body)},
			{"/v1/events:batch", string(body)},
			{"/v1/events:batch", `{"events":[` + string(body) + `]}`},
		} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", req.target, bytes.NewReader([]byte(req.body))))
			if rec.Code >= 500 {
				t.Fatalf("POST %s %q: %d %s", req.target, req.body, rec.Code, rec.Body)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("POST %s %q: body is not JSON: %q", req.target, req.body, rec.Body)
			}
			if rec.Code != 200 {
				var e struct {
					Error errorBody `json:"error"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
					t.Fatalf("POST %s %q: %d without the error shape: %s", req.target, req.body, rec.Code, rec.Body)
				}
			}
		}
	})
}

// fakeApply answers like the gateway would for a well-formed event, and
// refuses one without an id, so batches carry both results and errors.
func fakeApply(ev gateway.Event) (gateway.EventResult, error) {
	if ev.EventID == "" {
		return gateway.EventResult{}, rank.Invalid("event_id", "event_id is required")
	}
	var points int64
	if ev.Delta != nil {
		points = *ev.Delta
	}
	return gateway.EventResult{EventID: ev.EventID, Period: "2026-W34",
		Boards: []gateway.BoardPoints{{Board: ev.Family + "/2026-W34/national", Points: points}}}, nil
}

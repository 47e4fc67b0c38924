package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

// strictEvent decodes one event with the general strict decoder alone.
func strictEvent(data []byte) (eventJSON, error) {
	var w eventJSON
	err := decodeValue(data, "", &w)
	return w, err
}

// checkSameAsStrict fails when the fast decoder takes data but the strict
// decoder refuses it or reads it otherwise.
func checkSameAsStrict(t *testing.T, data []byte) {
	t.Helper()
	if fast, ok := fastEvent(data); ok {
		strict, err := strictEvent(data)
		if err != nil {
			t.Fatalf("fast path took %q, the strict decoder refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%q: fast %#v, strict %#v", data, fast, strict)
		}
	}
	if fast, ok := fastBatch(data); ok {
		var req batchRequest
		if err := decodeValue(data, "", &req); err != nil {
			t.Fatalf("fast path took batch %q, the strict decoder refuses it: %v", data, err)
		}
		if len(req.Events) != len(fast) {
			t.Fatalf("batch %q: fast %d events, strict %d", data, len(fast), len(req.Events))
		}
		for i, raw := range req.Events {
			strict, err := strictEvent(raw)
			if err != nil {
				t.Fatalf("fast path took batch %q, the strict decoder refuses its event %d: %v", data, i, err)
			}
			if !reflect.DeepEqual(fast[i], strict) {
				t.Fatalf("batch %q event %d: fast %#v, strict %#v", data, i, fast[i], strict)
			}
		}
	}
}

// FuzzFastEventSameAsStrict: whatever the fast decoder takes (one event or a
// batch), the strict decoder takes too and reads the same.
func FuzzFastEventSameAsStrict(f *testing.F) {
	for _, s := range fastTaken {
		f.Add([]byte(s))
	}
	for _, s := range fastLeft {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSameAsStrict(t, data)
		checkSameAsStrict(t, append(append([]byte(`{"events":[`), data...), "]}"...))
	})
}

// Inputs the fast decoder must take (the shapes clients send), each also
// read the same as the strict decoder reads it.
var fastTaken = []string{
	`{"event_id":"evt-1","family":"learning","user":"u42","delta":20,"dims":{"province":"zhejiang","class":"c3"}}`,
	` { "event_id" : "e" , "family":"f","user":"u","delta":-9223372036854775808 } ` + "\n",
	`{"event_id":"e","family":"f","user":"u","delta":9223372036854775807}`,
	`{"event_id":"e","family":"f","user":"u","delta":0}`,
	`{"event_id":"e","family":"f","user":"u","delta":-0}`,
	`{"event_id":"evt-2","family":"learning","user":"u42","reverses":"evt-1","reason":"fraud","dims":{"province":"zhejiang"}}`,
	`{"event_id":"b1","family":"game","user":"p1","value":900,"at":"2026-08-20T10:00:00+08:00"}`,
	`{"event_id":"b1","family":"race","user":"p1","value":90,"columns":{"time":12,"b":-3}}`,
	`{"event_id":"e","at":"not a time"}`,
	`{"dims":{}}`,
	`{"columns":{}}`,
	`{}`,
	"{\"event_id\":\"a\",\t\"family\":\"f\",\r\n\"user\":\"u\"}",
	`{"events":[{"event_id":"a","delta":1},{"event_id":"b","delta":2}]}`,
}

// Inputs the fast decoder must leave to the strict decoder.
var fastLeft = []string{
	`{"event_id":"e\u0041"}`, `{"event_id":"e\"x"}`, `{"reason":"h` + "\xc3\xa9" + `"}`, "{\"reason\":\"\xff\"}",
	"{\"reason\":\"a\x7f\"}", "{\"reason\":\"a\tb\"}",
	`{"Event_ID":"e"}`, `{"EVENT_ID":"e"}`, `{"Event":{"event_id":"x"}}`, `{"unknown":1}`,
	`{"metadata":{"a":1}}`, `{"event_id":"a","event_id":"b"}`, `{"dims":{"a":"1","a":"2"}}`,
	`{"columns":{"a":1,"a":2}}`,
	`{"delta":null}`, `{"event_id":null}`, `{"dims":null}`, `{"at":null}`, `{"delta":true}`,
	`{"delta":1.0}`, `{"delta":1e3}`, `{"delta":1E3}`, `{"delta":01}`, `{"delta":-}`, `{"delta":--1}`,
	`{"delta":9223372036854775808}`, `{"delta":-9223372036854775809}`, `{"delta":12345678901234567890}`,
	`{"delta":"5"}`, `{"dims":{"a":1}}`, `{"dims":[]}`, `{"columns":{"a":"1"}}`, `{"columns":{"a":1.5}}`,
	`{"event_id":"a",}`, `{,}`, `{"event_id":"a"`, `{"event_id":"a"}x`, `{"event_id":"a"}{}`,
	`{"event_id" "a"}`, `[]`, `null`, ``, ` `, `"x"`, "\xef\xbb\xbf{}",
	`{"events":[]}`, `{"events":null}`, `{"events":[null]}`, `{"events":[{}],"x":1}`, `{"events":[{}],}`,
	`{"events":[{}]}x`, `{"Events":[{}]}`, `{"events":[{"delta":1.5}]}`, `{"events":[{},]}`,
}

func TestFastJSONTakesTheCommonShapes(t *testing.T) {
	t.Parallel()
	for _, s := range fastTaken {
		_, one := fastEvent([]byte(s))
		_, batch := fastBatch([]byte(s))
		if !one && !batch {
			t.Errorf("the fast decoder leaves %q", s)
		}
		checkSameAsStrict(t, []byte(s))
		if one {
			b := `{"events":[` + s + `,` + s + `]}`
			if _, ok := fastBatch([]byte(b)); !ok {
				t.Errorf("the fast decoder leaves the batch %q", b)
			}
			checkSameAsStrict(t, []byte(b))
		}
	}
}

func TestFastJSONLeavesTheRest(t *testing.T) {
	t.Parallel()
	for _, s := range fastLeft {
		if w, ok := fastEvent([]byte(s)); ok {
			t.Errorf("the fast decoder takes %q: %#v", s, w)
		}
		if ws, ok := fastBatch([]byte(s)); ok {
			t.Errorf("the fast decoder takes the batch %q: %#v", s, ws)
		}
		b := `{"events":[` + s + `]}`
		if ws, ok := fastBatch([]byte(b)); ok {
			t.Errorf("the fast decoder takes the batch %q: %#v", b, ws)
		}
		checkSameAsStrict(t, []byte(s))
	}
}

// The answers of POST /v1/events and /v1/events:batch do not depend on
// which decoder read the body: a body the fast decoder takes and the same
// body in a shape it leaves (a key spelled with an escape) answer alike.
func TestFastJSONAnswersAsStrict(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{
		{`{"event_id":"e1","family":"f","user":"u","delta":5,"dims":{"province":"p1"}}`,
			`{"event_id":"e1","family":"f","user":"u","delta":5,"dims":{"province":"p\u0031"}}`},
		{`{"event_id":"e1","family":"f","user":"u","at":"yesterday"}`,
			`{"event_id":"e\u0031","family":"f","user":"u","at":"yesterday"}`},
	}
	for _, p := range pairs {
		if _, ok := fastEvent([]byte(p[0])); !ok {
			t.Fatalf("the fast decoder leaves %q", p[0])
		}
		if _, ok := fastEvent([]byte(p[1])); ok {
			t.Fatalf("the fast decoder takes %q", p[1])
		}
		a, errA := decodeEvent([]byte(p[0]), "events[3]")
		b, errB := decodeEvent([]byte(p[1]), "events[3]")
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(errA, errB) {
			t.Errorf("%q: %#v, %v\n%q: %#v, %v", p[0], a, errA, p[1], b, errB)
		}
		ba, errBA := decodeBatch([]byte(`{"events":[{},` + p[0] + `]}`))
		bb, errBB := decodeBatch([]byte(`{"events":[{},` + p[1] + `]}`))
		if !reflect.DeepEqual(ba, bb) || !reflect.DeepEqual(errBA, errBB) {
			t.Errorf("batches: %#v, %v\n%#v, %v", ba, errBA, bb, errBB)
		}
	}
	if !json.Valid([]byte(pairs[0][0])) {
		t.Fatal("pair not JSON")
	}
}

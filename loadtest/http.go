package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rankgate/rankgate/internal/workload"
)

// httpAPI renders operations as gateway requests (api/openapi.yaml). Every target's URL
// carries a fragment "#spec.board": it is never sent (a fragment is not part
// of an HTTP request) but vegeta hands the URL back in its Result, which is
// how results are aggregated per operation and page cursors are harvested.
type httpAPI struct {
	w      *World
	base   string // http://127.0.0.1:8080
	boards string // base + /v1/boards/{family}/{period}/
	hdr    http.Header
}

func newHTTPAPI(w *World) *httpAPI {
	base := strings.TrimRight(w.sc.Gateway, "/")
	return &httpAPI{
		w: w, base: base,
		boards: base + "/v1/boards/" + url.PathEscape(w.sc.Family) + "/" + url.PathEscape(w.sc.Period) + "/",
		hdr:    http.Header{"Content-Type": []string{"application/json"}},
	}
}

// Target renders op as a vegeta target.
func (h *httpAPI) Target(op *Op) vegeta.Target {
	s := &h.w.sc.Ops[op.Spec]
	tag := "#" + strconv.Itoa(op.Spec) + "." + strconv.Itoa(op.Board)
	switch op.Kind {
	case workload.OpEvent:
		b := h.appendEvent(nil, op, 0)
		return vegeta.Target{Method: http.MethodPost, URL: h.base + "/v1/events" + tag, Body: b, Header: h.hdr}
	case workload.OpBatch:
		b := append(make([]byte, 0, 160*len(op.Users)), `{"events":[`...)
		for j := range op.Users {
			if j > 0 {
				b = append(b, ',')
			}
			b = h.appendEvent(b, op, j)
		}
		b = append(b, "]}"...)
		return vegeta.Target{Method: http.MethodPost, URL: h.base + "/v1/events:batch" + tag, Body: b, Header: h.hdr}
	}
	board := h.boards + h.w.boards[op.Board].Dimension()
	q := url.Values{}
	if s.Consistency != "" {
		q.Set("consistency", s.Consistency)
	}
	var u string
	var body []byte
	method := http.MethodGet
	switch op.Kind {
	case workload.OpTop:
		q.Set("limit", strconv.Itoa(s.Limit))
		u = board + "/top"
	case workload.OpPage:
		q.Set("limit", strconv.Itoa(s.Limit))
		if c, ok := op.Cursor.(string); ok && c != "" {
			q.Set("cursor", c)
		}
		u = board + "/entries"
	case workload.OpMember:
		u = board + "/members/" + h.w.MemberName(op.Users[0])
	case workload.OpAround:
		q.Set("radius", strconv.Itoa(s.Radius))
		u = board + "/members/" + h.w.MemberName(op.Users[0]) + "/around"
	case workload.OpLookup:
		method = http.MethodPost
		u = board + "/members:lookup"
		body = append(make([]byte, 0, 16*len(op.Users)), `{"users":[`...)
		for j, m := range op.Users {
			if j > 0 {
				body = append(body, ',')
			}
			body = strconv.AppendQuote(body, h.w.MemberName(m))
		}
		body = append(body, "]}"...)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	t := vegeta.Target{Method: method, URL: u + tag, Body: body}
	if body != nil {
		t.Header = h.hdr
	}
	return t
}

// appendEvent appends event j of op as JSON.
func (h *httpAPI) appendEvent(b []byte, op *Op, j int) []byte {
	return appendEventJSON(b, h.w, eventID(op.Prefix, op.Event+uint64(j)), op.Users[j], op.Deltas[j])
}

// appendEventJSON appends the event id of member m adding value to the
// world's family, as JSON.
func appendEventJSON(b []byte, w *World, id string, m int32, value int64) []byte {
	b = append(b, `{"event_id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"family":`...)
	b = strconv.AppendQuote(b, w.sc.Family)
	b = append(b, `,"user":`...)
	b = strconv.AppendQuote(b, w.MemberName(m))
	b = append(b, `,"`...)
	b = append(b, w.valueField...)
	b = append(b, `":`...)
	b = strconv.AppendInt(b, value, 10)
	b = appendColumns(b, w, id)
	b = appendDims(b, w, m)
	return append(b, '}')
}

// appendDims appends `,"dims":{...}` for member m (nothing without dimensions).
func appendDims(b []byte, w *World, m int32) []byte {
	if len(w.dims) == 0 {
		return b
	}
	b = append(b, `,"dims":{`...)
	for di, d := range w.dims {
		if di > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, d.Type)
		b = append(b, ':')
		b = strconv.AppendQuote(b, w.boards[d.first+int(w.member[di][m])].Value)
	}
	return append(b, '}')
}

// parseTag reads the "#spec.board" fragment of a target URL.
func parseTag(u string) (spec, board int, ok bool) {
	i := strings.LastIndexByte(u, '#')
	if i < 0 {
		return 0, 0, false
	}
	a, b, found := strings.Cut(u[i+1:], ".")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.Atoi(a)
	bd, err2 := strconv.Atoi(b)
	return s, bd, err1 == nil && err2 == nil
}

// httpOutcome classifies an HTTP answer: "" for success, else the status code
// ("503"), "item_error" for a batch answered 200 with failed items, or the
// transport error.
func httpOutcome(kind string, code int, body []byte, errText string) string {
	switch {
	case code == 0:
		return transportClass(errText)
	case code < 200 || code >= 300:
		return strconv.Itoa(code)
	case kind == workload.OpBatch && bytes.Contains(body, []byte(`"error":`)):
		return "item_error"
	}
	return ""
}

func transportClass(errText string) string {
	switch {
	case errText == "":
		return "no_response"
	case strings.Contains(errText, "deadline exceeded"), strings.Contains(errText, "Timeout"), strings.Contains(errText, "timeout"):
		return "timeout"
	case strings.Contains(errText, "connection refused"):
		return "conn_refused"
	case strings.Contains(errText, "reset by peer"), strings.Contains(errText, "EOF"):
		return "conn_reset"
	}
	if len(errText) > 60 {
		errText = errText[:60]
	}
	return "err: " + errText
}

var nextCursorKey = []byte(`"next_cursor":"`)

// nextCursor finds next_cursor in a page answer without decoding it (cursors
// are base64url: no escapes).
func nextCursor(body []byte) string {
	i := bytes.Index(body, nextCursorKey)
	if i < 0 {
		return ""
	}
	rest := body[i+len(nextCursorKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// gatewayExec runs operations synchronously over HTTP (closed loop).
type gatewayExec struct {
	api    *httpAPI
	client *http.Client
}

func newHTTPClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

func (e *gatewayExec) Do(ctx context.Context, op *Op) Outcome {
	t := e.api.Target(op)
	req, err := t.Request()
	if err != nil {
		return Outcome{Class: transportClass(err.Error())}
	}
	req = req.WithContext(ctx)
	resp, err := e.client.Do(req)
	if err != nil {
		return Outcome{Class: transportClass(err.Error())}
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return Outcome{Class: transportClass(err.Error())}
	}
	out := Outcome{Class: httpOutcome(op.Kind, resp.StatusCode, body, "")}
	if op.Kind == workload.OpPage && out.Class == "" {
		if c := nextCursor(body); c != "" {
			out.Next = c
		}
	}
	return out
}

package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLive(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/boards/f/current/national/live" || r.URL.RawQuery != "top=3&member=u%201&radius=1" ||
			r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Last-Event-ID") != "7" {
			http.Error(w, r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ": live\n\nid: 8\nevent: snapshot\ndata: {\"board\":\"f/2026-W49/national\",\"source\":\"index\",\"top\":{\"entries\":[{\"user\":\"a\",\"points\":3}]},\"member\":null,\"around\":null}\n\n"+
			": ping\n\nid: 9\nevent: reconnect\ndata: {}\n\n")
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Live(context.Background(), Board{"f", "current", "national"}, LiveOptions{Top: 3, Member: "u 1", Radius: 1, LastEventID: "7"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.ID != "8" || ev.Type != "snapshot" || ev.Data == nil || ev.Data.Source != "index" ||
		len(ev.Data.Top.Entries) != 1 || ev.Data.Member != nil || ev.Data.Around != nil {
		t.Fatalf("first event %+v %v", ev, err)
	}
	if ev, err = s.Next(); err != nil || ev.Type != "reconnect" || ev.ID != "9" || ev.Data != nil {
		t.Fatalf("second event %+v %v", ev, err)
	}
	if _, err = s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v", err)
	}
}

func TestLiveRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"code":"unavailable","message":"full"}}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Live(context.Background(), Board{"f", "current", "national"}, LiveOptions{})
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != "unavailable" || e.RetryAfter == 0 {
		t.Fatalf("err %v", err)
	}
}

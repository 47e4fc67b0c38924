package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/client"
)

// TestMemberPoints: the raw reader's points are what decoding the whole
// event with the client library gives, for every shape an event takes.
func TestMemberPoints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data string
	}{
		{"member", `{"board":"w4/current/national","as_of":"2026-12-04T22:00:00Z","source":"index","top":{"board":"w4/current/national","source":"index","as_of":"2026-12-04T22:00:00Z","entries":[{"user":"a","points":9,"position":0,"rank":1}]},"member":{"board":"w4/current/national","source":"index","as_of":"2026-12-04T22:00:00Z","lag_ms":3,"user":"u7","points":1234,"position":5,"rank":6,"members":10,"percentile":50},"around":{"entries":[]}}`},
		{"negative points", `{"board":"b","top":{"entries":[]},"member":{"board":"b","user":"u","points":-17,"rank":1},"around":{"entries":[]}}`},
		{"user id that quotes a key", `{"board":"b","top":{"entries":[{"user":"x\",\"points\":5","points":1}]},"member":{"board":"b","user":"\"points\":99","points":42},"around":{"entries":[]}}`},
		{"not ranked", `{"board":"b","top":{"entries":[{"user":"a","points":3}]},"member":null,"around":null}`},
		{"top only", `{"board":"b","top":{"entries":[{"user":"a","points":3}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var want client.LiveData
			if err := json.Unmarshal([]byte(tc.data), &want); err != nil {
				t.Fatal(err)
			}
			got, ok := memberPoints([]byte(tc.data))
			if ok != (want.Member != nil) {
				t.Fatalf("memberPoints found a standing: %v, the decoded event: %v", ok, want.Member != nil)
			}
			if ok && got != want.Member.Points {
				t.Fatalf("points %d, want %d", got, want.Member.Points)
			}
		})
	}
}

// TestRawLive: the raw reader opens a stream over a real connection and
// reads its events as the client library does (comments skipped, a data
// line longer than its buffer gathered); a refusal is its status.
func TestRawLive(t *testing.T) {
	t.Parallel()
	long := `{"board":"b","top":{"entries":[` + strings.Repeat(`{"user":"a","points":1},`, 400) + `{"user":"z","points":0}]},"member":{"user":"m","points":77}}`
	stream := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" +
		": live\n\n" +
		"id: 1\nevent: snapshot\ndata: {\"board\":\"b\",\"top\":{\"entries\":[]}}\n\n" +
		": ping\n\n" +
		"id: 2\nevent: update\ndata: " + long + "\n\n" +
		"id: 3\nevent: reconnect\ndata: {}\n\n"
	req := make(chan string, 1)
	base := serveOnce(t, stream, req)
	s, err := openRawLive(context.Background(), base, client.Board{Family: "w 4", Period: "current", Dimension: "national"},
		client.LiveOptions{Top: 5, Member: "u 1", Radius: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	want := []struct {
		typ    string
		data   string
		points int64
	}{
		{"snapshot", `{"board":"b","top":{"entries":[]}}`, -1},
		{"update", long, 77},
		{"reconnect", `{}`, -1},
	}
	for i, w := range want {
		typ, data, err := s.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if typ != w.typ || string(data) != w.data {
			t.Fatalf("event %d: %s %.60q, want %s %.60q", i, typ, data, w.typ, w.data)
		}
		p, ok := memberPoints(data)
		if (w.points >= 0) != ok || (ok && p != w.points) {
			t.Fatalf("event %d: points %d (%v), want %d", i, p, ok, w.points)
		}
	}
	if _, _, err := s.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
	if got, want := <-req, "GET /v1/boards/w%204/current/national/live?member=u+1&radius=2&top=5 HTTP/1.1"; got != want {
		t.Fatalf("request line %q, want %q", got, want)
	}

	refused := serveOnce(t, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}", nil)
	_, err = openRawLive(context.Background(), refused, client.Board{Family: "f", Period: "current", Dimension: "d"}, client.LiveOptions{})
	var se *liveStatusError
	if !errors.As(err, &se) || se.code != 503 {
		t.Fatalf("refused stream: %v, want HTTP 503", err)
	}
}

// serveOnce answers one connection with answer after reading its request
// head (its first line sent on req when req is set); it returns the base
// URL.
func serveOnce(t *testing.T, answer string, req chan<- string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if i == 0 && req != nil {
				req <- strings.TrimRight(l, "\r\n")
			}
			if l == "\r\n" {
				break
			}
		}
		_, _ = io.WriteString(c, answer)
	}()
	return "http://" + ln.Addr().String()
}

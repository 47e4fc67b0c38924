package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/testnet"
	"github.com/rankgate/rankgate/internal/workload"
)

// seen is what the test server received.
type seen struct {
	method, uri, contentType, body string
}

// connTestServer answers by path: a Top-N with Content-Length, a page
// chunked, an event 503, and records every request.
func connTestServer(t *testing.T) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.RequestURI, r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/top"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"entries":[]}`)
		case strings.HasSuffix(r.URL.Path, "/entries"):
			// No Content-Length and flushed: chunked.
			_, _ = io.WriteString(w, `{"entries":[],`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `"next_cursor":"CUR"}`)
		case r.URL.Path == "/v1/events":
			w.Header().Set("Connection", "close")
			http.Error(w, `{"code":"unavailable"}`, http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
}

// -client conn sends what -client transport sends and reads the answers
// alike: Content-Length and chunked bodies, errors, Connection: close, and a
// kept-alive connection the server closed in between.
func TestConnClientSameAsTransport(t *testing.T) {
	srv, taken := connTestServer(t)
	w := testWorld(t, func(sc *Scenario) {
		sc.Gateway = srv.URL
		sc.Ops = []workload.OpSpec{workload.Op(workload.OpTop, 1), workload.Op(workload.OpPage, 1), workload.Op(workload.OpEvent, 1)}
		sc.Ops[0].Consistency = "cached"
		sc.Ops[0].Limit = 100
	})
	api := newHTTPAPI(w)
	ops := []struct {
		name      string
		op        Op
		wantClass string
		wantNext  any
	}{
		{"top, Content-Length", Op{Spec: 0, Kind: workload.OpTop}, "", nil},
		{"top again (rendered once)", Op{Spec: 0, Kind: workload.OpTop}, "", nil},
		{"page, chunked, its cursor", Op{Spec: 1, Kind: workload.OpPage}, "", "CUR"},
		{"event, 503 and Connection: close", Op{Spec: 2, Kind: workload.OpEvent, Users: []int32{3}, Deltas: []int64{4}, Event: 1, Prefix: "r"}, "503", nil},
		{"top after the close", Op{Spec: 0, Kind: workload.OpTop}, "", nil},
	}
	transport := &gatewayExec{api: api, client: newHTTPClient(1, 5*time.Second)}
	ce, err := newConnExec(api)
	if err != nil {
		t.Fatal(err)
	}
	conn := ce.ForWorker()
	defer conn.Close()
	for _, tc := range ops {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			op := tc.op
			want := transport.Do(ctx, &op)
			wantSeen := taken()
			op = tc.op
			got := conn.Do(ctx, &op)
			gotSeen := taken()
			if got != want || want.Class != tc.wantClass || want.Next != tc.wantNext {
				t.Fatalf("conn %+v, transport %+v; want class %q next %v", got, want, tc.wantClass, tc.wantNext)
			}
			if len(gotSeen) != 1 || len(wantSeen) != 1 || gotSeen[0] != wantSeen[0] {
				t.Fatalf("the server saw %+v from conn, %+v from transport", gotSeen, wantSeen)
			}
		})
	}
	t.Run("the server closed the idle connection", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		op := Op{Spec: 0, Kind: workload.OpTop}
		if out := conn.Do(ctx, &op); out.Class != "" {
			t.Fatalf("before: %+v", out)
		}
		srv.CloseClientConnections()
		if out := conn.Do(ctx, &op); out.Class != "" {
			t.Fatalf("after the server closed the connection: %+v", out)
		}
	})
	t.Run("nothing listens", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dead := "http://" + testnet.RefusingAddr(t)
		w2 := testWorld(t, func(sc *Scenario) {
			sc.Gateway = dead
			sc.Ops = []workload.OpSpec{workload.Op(workload.OpTop, 1)}
		})
		ce2, err := newConnExec(newHTTPAPI(w2))
		if err != nil {
			t.Fatal(err)
		}
		op := Op{Spec: 0, Kind: workload.OpTop}
		if out := ce2.Do(ctx, &op); out.Class != "conn_refused" {
			t.Fatalf("no server: %+v", out)
		}
	})
}

// A worker's repeated Top-N costs no allocation in the client. (The server
// is a bare loop on a socket that allocates nothing per request itself:
// AllocsPerRun counts the whole process.)
func TestConnClientTopAllocs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"entries\":[]}")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf) // one request per read: the client writes it at once
			if err != nil || n == 0 {
				return
			}
			if _, err := c.Write(answer); err != nil {
				return
			}
		}
	}()
	w := testWorld(t, func(sc *Scenario) {
		sc.Gateway = "http://" + ln.Addr().String()
		sc.Ops = []workload.OpSpec{workload.Op(workload.OpTop, 1)}
	})
	ce, err := newConnExec(newHTTPAPI(w))
	if err != nil {
		t.Fatal(err)
	}
	conn := ce.ForWorker()
	defer conn.Close()
	ctx := context.Background()
	op := Op{Spec: 0, Kind: workload.OpTop}
	if out := conn.Do(ctx, &op); out.Class != "" {
		t.Fatalf("first: %+v", out)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if out := conn.Do(ctx, &op); out.Class != "" {
			t.Fatalf("%+v", out)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per repeated Top-N, want 0", allocs)
	}
}

// -client conn is for the closed loop and the live scenario only (the join
// storm, which takes it too, validates no scenario), and a known client.
func TestScenarioClient(t *testing.T) {
	for _, tc := range []struct {
		name, mode, client string
		live, ok           bool
	}{
		{"default", "closed", "", false, true},
		{"transport, open loop", "open", ClientTransport, false, true},
		{"conn, closed loop", "closed", ClientConn, false, true},
		{"conn, open loop", "open", ClientConn, false, false},
		{"conn, live scenario", "open", ClientConn, true, true},
		{"unknown", "closed", "h2", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := DefaultScenario()
			sc.Mode, sc.Client, sc.live = tc.mode, tc.client, tc.live
			if err := sc.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// Command plainhttp is the yardstick of the cached-read tail (`make
// bench-refresh`): a plain Go net/http server that answers every GET with
// the same bytes and does no other work — no routing, no metrics, no log, no
// cache. Driven by the load tool's closed loop exactly like the gateway (the
// same URL, the same connections), it shows what net/http and the machine
// alone cost: what p99 ÷ p50 a server that does nothing reaches here.
//
// It is also the yardstick of live boards (`make bench-live`): GET
// /live?rate=R is a text/event-stream that gets the same bytes as an event
// with probability R every -interval, written by one loop to every stream
// (one writev each, split over GOMAXPROCS goroutines), with nothing else —
// no computation, no limits, no heartbeats, no stall checks. Against the
// same clients polling this server, it shows what pushing costs beside
// polling on this machine before any of the gateway's work.
//
// It answers GET /readyz with {"status":"ready"} (the load tool checks it),
// GET /metrics with its CPU seconds and heap in use (the names the
// gateway's /metrics uses), GET /live as above, and any other request with
// the file given by -body, as application/json with Content-Length and
// Cache-Control: max-age=1, like a cached read.
//
// It imports nothing but the standard library: a yardstick holds none of
// the gateway's code.
//
//	plainhttp -listen 127.0.0.1:18182 -body top100.json -ready-file ready
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18182", "address to listen on")
	bodyFile := flag.String("body", "", "file whose bytes answer every request (required)")
	readyFile := flag.String("ready-file", "", "write the listen address here once listening")
	interval := flag.Duration("interval", time.Second, "GET /live: the interval of the event rounds")
	flag.Parse()
	if err := run(*listen, *bodyFile, *readyFile, *interval); err != nil {
		fmt.Fprintln(os.Stderr, "plainhttp:", err)
		os.Exit(1)
	}
}

func run(listen, bodyFile, readyFile string, interval time.Duration) error {
	if bodyFile == "" {
		return errors.New("-body is required")
	}
	if interval <= 0 {
		return errors.New("-interval must be > 0")
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if readyFile != "" {
		if err := os.WriteFile(readyFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	p := newPusher(body)
	stop := make(chan struct{})
	defer close(stop)
	go p.run(interval, stop)
	srv := &http.Server{Handler: handler(body, p)}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler answers body to every request but GET /readyz, /metrics and
// /live (p's streams).
func handler(body []byte, p *pusher) http.Handler {
	ready := []byte(`{"status":"ready"}` + "\n")
	length := []string{strconv.Itoa(len(body))}
	readyLength := []string{strconv.Itoa(len(ready))}
	jsonType := []string{"application/json"}
	maxAge := []string{"max-age=1"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = jsonType
		switch r.URL.Path {
		case "/readyz":
			h["Content-Length"] = readyLength
			_, _ = w.Write(ready)
			return
		case "/metrics":
			h["Content-Type"] = []string{"text/plain; version=0.0.4"}
			_, _ = w.Write(metrics())
			return
		case "/live":
			p.serve(w, r)
			return
		}
		h["Content-Length"] = length
		h["Cache-Control"] = maxAge
		_, _ = w.Write(body)
	})
}

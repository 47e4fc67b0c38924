// Command plainhttp is the yardstick of the cached-read tail (`make
// bench-refresh`): a plain Go net/http server that answers every GET with
// the same bytes and does no other work — no routing, no metrics, no log, no
// cache. Driven by the load tool's closed loop exactly like the gateway (the
// same URL, the same connections), it shows what net/http and the machine
// alone cost: what p99 ÷ p50 a server that does nothing reaches here.
//
// It answers GET /readyz with {"status":"ready"} (the load tool checks it)
// and any other request with the file given by -body, as application/json
// with Content-Length and Cache-Control: max-age=1, like a cached read.
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
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18182", "address to listen on")
	bodyFile := flag.String("body", "", "file whose bytes answer every request (required)")
	readyFile := flag.String("ready-file", "", "write the listen address here once listening")
	flag.Parse()
	if err := run(*listen, *bodyFile, *readyFile); err != nil {
		fmt.Fprintln(os.Stderr, "plainhttp:", err)
		os.Exit(1)
	}
}

func run(listen, bodyFile, readyFile string) error {
	if bodyFile == "" {
		return errors.New("-body is required")
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
	srv := &http.Server{Handler: handler(body)}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler answers body to every request but GET /readyz.
func handler(body []byte) http.Handler {
	ready := []byte(`{"status":"ready"}` + "\n")
	length := []string{strconv.Itoa(len(body))}
	readyLength := []string{strconv.Itoa(len(ready))}
	jsonType := []string{"application/json"}
	maxAge := []string{"max-age=1"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = jsonType
		if r.URL.Path == "/readyz" {
			h["Content-Length"] = readyLength
			_, _ = w.Write(ready)
			return
		}
		h["Content-Length"] = length
		h["Cache-Control"] = maxAge
		_, _ = w.Write(body)
	})
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"
)

// servePprof serves the Go profiler (net/http/pprof) on its own listener at
// addr, never on the API's: profiles reveal internals and a CPU profile costs
// CPU, so it is off unless asked for (-pprof / RANKGATE_PPROF_ADDR) and
// belongs on a loopback or otherwise private address. bound is the address
// it listens on; stop closes it.
func servePprof(addr string, log *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Warn("pprof listener stopped", "err", err)
		}
	}()
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err != nil || !ap.Addr().IsLoopback() {
		log.Warn("pprof serving on an address that is not loopback: profiles reveal internals and cost CPU; keep it private", "addr", ln.Addr().String())
	} else {
		log.Info("pprof serving", "addr", ln.Addr().String())
	}
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/rank"
)

// Lingering, the way nginx closes: a client that writes its whole body
// before it reads (Python's urllib and requests do) never sees an early
// answer if the server closes with part of the body unread — the server's
// kernel answers the unread bytes with a reset, and the client's write
// fails (or its kernel drops the answer it had received). So after refusing
// a body it has not read, the server reads and discards what the client
// still sends, at most lingerBytes or for lingerTime, and closes only then;
// a client that sends more than that, or stalls, loses the connection.
const (
	lingerBytes = 8 << 20
	lingerTime  = 2 * time.Second
)

// routeUnmatched is the route label of a request no pattern matched, so that
// stray paths cannot blow up label cardinality.
const routeUnmatched = "unmatched"

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
}

// newMetrics builds the request metrics and registers them with reg (none
// when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"route", "method", "code"}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rankgate_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, labels),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rankgate_http_inflight_requests",
			Help: "HTTP requests being served.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.duration, m.inflight} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
			}
		}
	}
	return m, nil
}

// ServeHTTP is the outermost middleware: in-flight gauge, panic recovery,
// JSON answers for the mux's own 404 and 405, metrics and the access log.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.metrics.inflight.Inc()
	defer s.metrics.inflight.Dec()

	rw := &responseWriter{ResponseWriter: w, req: r}
	defer func() {
		p := recover()
		abort := p == http.ErrAbortHandler
		if p != nil && !abort {
			s.log.ErrorContext(r.Context(), "panic serving request",
				"method", r.Method, "route", r.Pattern, "path", r.URL.Path,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if rw.status == 0 {
				writeErrorBody(rw, errorBody{Code: rank.CodeInternal, Message: internalMessage})
			} else {
				// Part of an answer is out: cut the connection rather than
				// let a truncated body pass for a whole one.
				abort = true
			}
		}
		s.observe(r, rw, time.Since(start))
		if abort {
			panic(http.ErrAbortHandler) // net/http aborts the response quietly
		}
		if rw.bodyRefused || (r.ContentLength > maxBody && !expectsContinue(r)) {
			s.linger(rw, r)
		}
	}()
	if s.cors != nil && s.cors.handle(rw, r) {
		return // a preflight, answered
	}
	// ServeMux sets r.Pattern on this very request before calling the
	// route's handler, so it is readable here afterwards.
	s.mux.ServeHTTP(rw, r)
}

func (s *server) observe(r *http.Request, rw *responseWriter, d time.Duration) {
	status := rw.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	route := r.Pattern
	if route == "" {
		route = routeUnmatched
	}
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() && route != routeUnmatched {
		_, path, _ := strings.Cut(route, " ") // the pattern's method goes
		span.SetAttributes(attribute.String("http.route", path))
	}
	method := methodLabel(r.Method)
	code := statusLabel(status)
	s.metrics.requests.WithLabelValues(route, method, code).Inc()
	s.metrics.duration.WithLabelValues(route, method, code).Observe(d.Seconds())
	// The access log's attributes are built only when the line is written
	// (a served read logs at debug, off by default).
	if level := logLevel(status, rw.code); s.log.Enabled(r.Context(), level) {
		s.log.Log(r.Context(), level, "http request",
			"method", r.Method, "route", route, "path", r.URL.Path,
			"status", status, "duration", d, "bytes", rw.bytes)
	}
}

// statusLabel is the code label of a status: the common ones without an
// allocation.
func statusLabel(status int) string {
	switch status {
	case http.StatusOK:
		return "200"
	case http.StatusNotModified:
		return "304"
	case http.StatusBadRequest:
		return "400"
	case http.StatusNotFound:
		return "404"
	case http.StatusTooManyRequests:
		return "429"
	case http.StatusServiceUnavailable:
		return "503"
	}
	return strconv.Itoa(status)
}

// linger sends the answer written so far, then reads and discards the rest
// of the request body until its end, lingerBytes or lingerTime, whichever
// comes first (see lingerBytes). net/http closes the connection afterwards:
// the body was refused, so it was marked to close.
func (s *server) linger(rw *responseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.Body == nil || r.Body == http.NoBody {
		return // HTTP/2 refuses a stream's body without closing the connection
	}
	rc := http.NewResponseController(rw)
	if err := rc.Flush(); err != nil {
		return
	}
	if err := rc.SetReadDeadline(time.Now().Add(s.lingerTime)); err != nil {
		return // a connection without deadlines cannot be bounded in time
	}
	n, err := io.CopyN(io.Discard, r.Body, s.lingerBytes)
	if err == io.EOF {
		err = nil
	}
	s.log.DebugContext(r.Context(), "discarded a refused request body before closing",
		"method", r.Method, "path", r.URL.Path, "status", rw.status, "bytes", n, "error", err)
}

// expectsContinue reports a request waiting for 100 Continue before it
// sends its body: unless something read the body, the 100 was never sent,
// and the client sends nothing to linger for.
func expectsContinue(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Expect"), "100-continue")
}

// refuseBody marks the body of the request w answers as refused after part
// of it was read: the server lingers on it (see lingerBytes).
func refuseBody(w http.ResponseWriter) {
	for {
		if rw, ok := w.(*responseWriter); ok {
			rw.bodyRefused = true
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// responseWriter records status and size, and turns the ServeMux's plain
// text 404 and 405 (written when no pattern matched) into the error shape.
type responseWriter struct {
	http.ResponseWriter
	req     *http.Request
	status  int
	bytes   int64
	swallow bool // the mux's own body is being replaced
	// bodyRefused: a handler refused the body after reading part of it.
	bodyRefused bool
	// code is the error code of an error answer (writeErrorBody).
	code rank.Code
}

// noteCode records the error code of the answer (the access log's level).
func (w *responseWriter) noteCode(c rank.Code) { w.code = c }

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		w.ResponseWriter.WriteHeader(code) // let net/http report the superfluous call
		return
	}
	if w.req.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		b := errorBody{Code: rank.CodeNotFound, Message: "no route for " + w.req.Method + " " + w.req.URL.Path}
		if code == http.StatusMethodNotAllowed {
			b = errorBody{Code: CodeMethodNotAllowed,
				Message: w.req.Method + " is not allowed on " + w.req.URL.Path + "; allowed: " + w.Header().Get("Allow")}
		}
		writeErrorBody(writerOnly{w}, b)
		w.swallow = true
		return
	}
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerOnly writes through w without the 404/405 interception.
type writerOnly struct{ w *responseWriter }

func (o writerOnly) Header() http.Header { return o.w.Header() }

func (o writerOnly) WriteHeader(code int) {
	o.w.status = code
	o.w.ResponseWriter.WriteHeader(code)
}

func (o writerOnly) Write(p []byte) (int, error) {
	n, err := o.w.ResponseWriter.Write(p)
	o.w.bytes += int64(n)
	return n, err
}

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/rank"
)

// guard bounds the /v1 requests served at once and gives each a deadline.
// It wraps every /v1 route outside Auth, so a flood is shed before any token
// is checked; /healthz, /readyz and /metrics are never shed.
type guard struct {
	slots   chan struct{} // nil: unbounded
	timeout time.Duration // 0: no deadline of our own
	shed    prometheus.Counter
}

func newGuard(maxInflight int, timeout time.Duration, reg prometheus.Registerer) (*guard, error) {
	if maxInflight < 0 || timeout < 0 {
		return nil, fmt.Errorf("httpapi: negative MaxInflight (%d) or RequestTimeout (%s)", maxInflight, timeout)
	}
	g := &guard{
		timeout: timeout,
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_http_shed_total",
			Help: "Requests answered 503 at once because max_inflight requests were being served.",
		}),
	}
	if maxInflight > 0 {
		g.slots = make(chan struct{}, maxInflight)
	}
	if reg != nil {
		if err := reg.Register(g.shed); err != nil {
			return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
		}
	}
	return g, nil
}

// wrap sheds a request when every slot is taken (503 unavailable with
// Retry-After, never a queue) and otherwise serves it under the request
// deadline; a handler that runs out of it answers 503 through writeError.
func (g *guard) wrap(next http.Handler) http.Handler {
	capacity := strconv.Itoa(cap(g.slots))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.slots != nil {
			select {
			case g.slots <- struct{}{}:
				defer func() { <-g.slots }()
			default:
				g.shed.Inc()
				writeErrorBody(w, errorBody{Code: rank.CodeUnavailable,
					Message: "the gateway is serving its limit of " + capacity + " requests; retry shortly"})
				return
			}
		}
		if g.timeout > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), g.timeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

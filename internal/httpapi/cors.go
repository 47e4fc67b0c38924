package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CORSOptions let browsers on other origins call the /v1 routes
// (config server.cors).
type CORSOptions struct {
	// AllowedOrigins are exact origins as browsers send them in Origin
	// ("https://play.example.com"); empty: CORS is off, no header at all.
	AllowedOrigins []string
	// MaxAge is the preflight's Access-Control-Max-Age (whole seconds).
	MaxAge time.Duration
}

// The CORS answer headers. Methods are those the API routes use (GET also
// serves HEAD); headers are those a browser client sends; exposed are the
// answer headers a browser client needs to read.
const (
	corsAllowMethods  = "GET, POST, PUT, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID"
	corsExposeHeaders = "Retry-After, WWW-Authenticate"
)

// routePreflight is the route label (metrics, access log) of a preflight
// answered by the CORS layer: preflights match no route pattern.
const routePreflight = "OPTIONS /v1/ (preflight)"

// cors answers preflights from listed origins and marks the other /v1
// answers to them. It runs before routing and auth: a browser sends no
// credentials with a preflight, and a preflight costs no token any rate.
type cors struct {
	origins map[string]bool
	maxAge  string
}

// newCORS checks the options; nil when no origin is listed.
func newCORS(o CORSOptions) (*cors, error) {
	if len(o.AllowedOrigins) == 0 {
		return nil, nil
	}
	if o.MaxAge < 0 {
		return nil, fmt.Errorf("httpapi: CORS max age %s is negative", o.MaxAge)
	}
	c := &cors{origins: make(map[string]bool, len(o.AllowedOrigins)),
		maxAge: strconv.FormatInt(int64(o.MaxAge/time.Second), 10)}
	for _, origin := range o.AllowedOrigins {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.Scheme+"://"+u.Host != origin || strings.Contains(origin, "*") {
			return nil, fmt.Errorf("httpapi: CORS origin %q is not scheme://host[:port]", origin)
		}
		c.origins[origin] = true
	}
	return c, nil
}

// handle adds the CORS headers of a /v1 request and answers it when it is a
// preflight from a listed origin (true: answered). Anything else passes on
// unchanged: an origin not listed gets no CORS header, and its preflight
// the answer the routes give (405 method_not_allowed).
func (c *cors) handle(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		return false
	}
	h := w.Header()
	// The answer depends on Origin whatever it is, so every /v1 answer
	// says so: a cache must not hand one origin's answer to another.
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if origin == "" || !c.origins[origin] || len(r.Header.Values("Origin")) != 1 {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", c.maxAge)
		r.Pattern = routePreflight
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	return false
}

// Package apitest checks HTTP traffic against the contract, api/openapi.yaml:
// a Checker validates request/answer pairs with pb33f/libopenapi-validator
// (OpenAPI 3.1, JSON Schema 2020-12), counts them and keeps every mismatch.
// Tests hook it into their HTTP client (Transport) or around an in-process
// handler (Handler), so that every call they make is checked.
//
// The rule: an answer must match the document — a documented status for the
// operation, with a body of its schema. A request the document refuses (a
// test of bad input) must be refused by the server with a 4xx in the error
// shape; one the document accepts must be served as documented. A request
// for no documented operation must get 404 not_found or 405
// method_not_allowed.
//
// Test support: it imports api (the contract) only of rankgate; production
// code must not import it.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/rankgate/rankgate/api"
)

// statusClientClosed is what the gateway records when the client went away
// before the answer (nginx's 499); nobody receives it.
const statusClientClosed = 499

// Checker validates traffic against the document. Safe for concurrent use.
type Checker struct {
	mu       sync.Mutex
	checked  atomic.Int64
	failures []string
}

// One validator for the process, built once: the libopenapi validator is not
// documented as safe for concurrent use, so vMu serialises it (tests'
// traffic is small).
var (
	vOnce sync.Once
	vMu   sync.Mutex
	v     validator.Validator
	vErr  error
)

func load() error {
	vOnce.Do(func() {
		doc, err := libopenapi.NewDocument(api.YAML)
		if err != nil {
			vErr = fmt.Errorf("api/openapi.yaml: %w", err)
			return
		}
		val, errs := validator.NewValidator(doc, config.WithoutSecurityValidation())
		if len(errs) > 0 {
			vErr = fmt.Errorf("api/openapi.yaml: %v", errs)
			return
		}
		if ok, verrs := val.ValidateDocument(); !ok {
			vErr = fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %s", describe(verrs))
			return
		}
		v = val
	})
	return vErr
}

// New returns a Checker over api/openapi.yaml, which must be a valid
// OpenAPI document.
func New() (*Checker, error) {
	if err := load(); err != nil {
		return nil, err
	}
	return &Checker{}, nil
}

// Checked is the number of request/answer pairs checked so far.
func (c *Checker) Checked() int64 { return c.checked.Load() }

// Failures returns every mismatch seen so far.
func (c *Checker) Failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.failures...)
}

// Forget drops the last n recorded mismatches (a test that provoked them
// on purpose).
func (c *Checker) Forget(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = min(n, len(c.failures))
	c.failures = c.failures[:len(c.failures)-n]
	totalFailed.Add(-int64(n))
}

func (c *Checker) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// Totals across every Checker of the process (a test binary): exchanges
// checked and mismatches.
var totalChecked, totalFailed atomic.Int64

// Totals returns the exchanges checked and the mismatches of every Checker
// of this process.
func Totals() (checked, failed int64) { return totalChecked.Load(), totalFailed.Load() }

// Check validates one exchange. reqBody and respBody are the bodies (the
// request's and the response's Body fields are not read). It records a
// failure and returns it as an error.
func (c *Checker) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	err := c.check(req, reqBody, resp, respBody)
	if err != nil {
		c.fail("%v", err)
	}
	return err
}

// check validates one exchange and counts it; it records nothing.
// corsPreflight reports a CORS preflight (OPTIONS with Origin and
// Access-Control-Request-Method) answered 204, empty, allowing that origin.
func corsPreflight(req *http.Request, resp *http.Response, respBody []byte) bool {
	origin := req.Header.Get("Origin")
	return req.Method == http.MethodOptions && origin != "" && req.Header.Get("Access-Control-Request-Method") != "" &&
		resp.StatusCode == http.StatusNoContent && len(respBody) == 0 &&
		resp.Header.Get("Access-Control-Allow-Origin") == origin
}

func (c *Checker) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) (err error) {
	if resp.StatusCode == statusClientClosed {
		return nil // the client went away: no answer reached anyone
	}
	c.checked.Add(1)
	totalChecked.Add(1)
	name := req.Method + " " + req.URL.RequestURI()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: the validator panicked: %v", name, p)
		}
		if err != nil {
			totalFailed.Add(1)
		}
	}()
	rq := req.Clone(req.Context())
	if req.URL.Opaque != "" {
		// A raw request-URI (the e2e tests send paths exactly as given).
		u, perr := url.ParseRequestURI(req.URL.Opaque)
		if perr != nil {
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				return nil // unparseable, and refused: nothing to check against
			}
			return fmt.Errorf("%s: an unparseable request-URI answered %d", name, resp.StatusCode)
		}
		u.Scheme, u.Host = req.URL.Scheme, req.URL.Host
		rq.URL = u
	}
	rq.Body = io.NopCloser(bytes.NewReader(reqBody))
	rq.ContentLength = int64(len(reqBody))
	if len(reqBody) > 0 && !strings.HasPrefix(rq.Header.Get("Content-Type"), "application/json") {
		// The gateway reads every body as JSON whatever its Content-Type
		// (curl -d sends a form type); the document declares JSON.
		rq.Header.Set("Content-Type", "application/json")
	}
	rs := *resp
	rs.Body = io.NopCloser(bytes.NewReader(respBody))
	rs.Request = rq

	if p := rq.URL.Path; p != "" && path.Clean(p) != p && !strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		// net/http's mux sends a path that is not clean to its clean form.
		if resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusMovedPermanently {
			return nil
		}
	}
	vMu.Lock()
	reqOK, reqErrs := v.ValidateHttpRequestSync(rq)
	rq.Body = io.NopCloser(bytes.NewReader(reqBody))
	var respOK bool
	var respErrs []*verrors.ValidationError
	if reqOK || !unknownOperation(reqErrs) {
		respOK, respErrs = v.ValidateHttpResponse(rq, &rs)
	}
	vMu.Unlock()

	switch {
	case !reqOK && unknownOperation(reqErrs) && corsPreflight(req, resp, respBody):
		// A CORS preflight answered for a listed origin: the CORS protocol,
		// described in the document's info, not an operation of it.
	case !reqOK && unknownOperation(reqErrs):
		// No such operation: the server must say so.
		if code := errorCode(respBody); !(resp.StatusCode == 404 && code == "not_found") && !(resp.StatusCode == 405 && code == "method_not_allowed") {
			err = fmt.Errorf("%s: not in api/openapi.yaml (%s), but answered %d %s", name, describe(reqErrs), resp.StatusCode, snippet(respBody))
		}
	case !respOK:
		err = fmt.Errorf("%s → %d: the answer does not match api/openapi.yaml: %s; body %s", name, resp.StatusCode, describe(respErrs), snippet(respBody))
	case !reqOK && (resp.StatusCode < 400 || resp.StatusCode >= 500) && resp.StatusCode != 401 && resp.StatusCode != 429 && resp.StatusCode != 503:
		err = fmt.Errorf("%s: api/openapi.yaml refuses this request (%s), but the server answered %d", name, describe(reqErrs), resp.StatusCode)
	}
	return err
}

// unknownOperation reports whether the request matched no path or method.
func unknownOperation(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.IsPathMissingError() || e.IsOperationMissingError() {
			return true
		}
	}
	return false
}

func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}

func describe(errs []*verrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			s += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func snippet(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Transport returns a RoundTripper that sends through base (nil:
// http.DefaultTransport) and checks every exchange. A mismatch is recorded
// (see Failures), not returned: the test sees the real answer.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

type transport struct {
	c    *Checker
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if slot, ok := req.Context().Value(slotKey{}).(*error); ok {
		*slot = t.c.check(req, reqBody, resp, respBody) // the caller reports it
	} else {
		_ = t.c.Check(req, reqBody, resp, respBody)
	}
	return resp, nil
}

type slotKey struct{}

// WithResult returns a context under which a request sent through a
// Checker's Transport leaves its check's outcome in *result (nil: it
// matched) instead of among Failures: the caller, which knows its test,
// reports it.
func WithResult(ctx context.Context, result *error) context.Context {
	return context.WithValue(ctx, slotKey{}, result)
}

// Handler wraps an in-process handler: every request served through it is
// checked with the answer the handler wrote.
func (c *Checker) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		orig := r.Clone(r.Context())
		h.ServeHTTP(rec, r)
		resp := rec.Result()
		body := rec.Body.Bytes()
		_ = c.Check(orig, reqBody, resp, body)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// Require fails t (at its end) when any exchange mismatched, and when fewer
// than min exchanges were checked: a test proves the checks ran.
func (c *Checker) Require(t testing.TB, min int64) {
	t.Helper()
	t.Cleanup(func() {
		for _, f := range c.Failures() {
			t.Errorf("openapi: %s", f)
		}
		if n := c.Checked(); n < min {
			t.Errorf("openapi: only %d exchanges checked against api/openapi.yaml, want at least %d", n, min)
		} else {
			t.Logf("openapi: %d exchanges checked against api/openapi.yaml, %d mismatches", n, len(c.Failures()))
		}
	})
}

package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/api"
	"github.com/rankgate/rankgate/internal/apitest"
)

// openAPIDoc is the part of the served document these tests read.
type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	OperationID string `json:"operationId"`
	Scope       string `json:"x-scope"`
	Security    *[]any `json:"security"`
	// PlayerScopes are the player token scopes that open the operation
	// (any one of them); none: no player token does.
	PlayerScopes []string `json:"x-player-scopes"`
}

// docOperations returns "METHOD /path" → operation for every operation of
// the embedded document.
func docOperations(t *testing.T) map[string]openAPIOperation {
	t.Helper()
	data, err := api.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	ops := map[string]openAPIOperation{}
	for path, item := range doc.Paths {
		for method, op := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				ops[strings.ToUpper(method)+" "+path] = op
			}
		}
	}
	return ops
}

// TestOpenAPICoversRoutes fails when a route the server registers is not an
// operation of api/openapi.yaml, or the document has an operation no route
// serves, or an operation's x-scope is not the scope the auth layer asks.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	h, err := New(&fakeService{t: t}, Options{Gatherer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	routes := h.(*server).allPatterns
	ops := docOperations(t)
	if len(routes) < 30 {
		t.Fatalf("only %d routes recorded: %q", len(routes), routes)
	}
	// OpenAPI tools match paths with their trailing slash trimmed: /ui (a
	// redirect) is documented as a 301 of /ui/, and the files under the
	// /ui/ subtree as /ui/{file}.
	aliases := map[string]string{"GET /ui": "GET /ui/", "GET /ui/{file}": "GET /ui/"}
	covered := 0
	for _, r := range routes {
		key := r
		if a, ok := aliases[r]; ok {
			key = a
		}
		op, ok := ops[key]
		if !ok {
			t.Errorf("route %q is registered but not in api/openapi.yaml (add its path and method)", r)
			continue
		}
		covered++
		if op.OperationID == "" {
			t.Errorf("%s has no operationId", r)
		}
		scope, scoped := ScopeOf(r)
		switch {
		case strings.HasPrefix(r, "GET /v1/openapi.json") || !strings.Contains(r, " /v1/"):
			if op.Security == nil || len(*op.Security) != 0 || op.Scope != "" {
				t.Errorf("%s is open: want security: [] and no x-scope", r)
			}
		case !scoped:
			t.Errorf("%s has no scope rule", r)
		case op.Scope != scope:
			t.Errorf("%s: x-scope %q, the auth layer asks %q", r, op.Scope, scope)
		}
		ps, _, _ := PlayerScopesOf(r)
		if !slices.Equal(op.PlayerScopes, ps) {
			t.Errorf("%s: x-player-scopes %v, the auth layer takes %v", r, op.PlayerScopes, ps)
		}
		if takesJWT := op.Security != nil && strings.Contains(fmt.Sprint(*op.Security), "playerJWT"); takesJWT != (len(ps) > 0) {
			t.Errorf("%s: security %v lists playerJWT %v, want %v", r, op.Security, takesJWT, len(ps) > 0)
		}
	}
	for op := range ops {
		if a, ok := aliases[op]; ok {
			op = a
		}
		if !slices.Contains(routes, op) {
			t.Errorf("api/openapi.yaml has %s, which the server does not register", op)
		}
	}
	t.Logf("routes covered: %d/%d", covered, len(routes))
}

// TestOpenAPIServed: GET /v1/openapi.json answers the embedded document as
// JSON, without a token even when auth is on.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	deny := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	}
	h, err := New(&fakeService{t: t}, Options{Auth: deny})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	want, err := api.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Body.String() != string(want) {
		t.Fatal("GET /v1/openapi.json is not the embedded document")
	}
	var doc openAPIDoc
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Paths) == 0 {
		t.Fatalf("served document: %v, %d paths", err, len(doc.Paths))
	}
}

// contractChecked wraps a test's handler so that every request it serves and
// every answer it writes are checked against api/openapi.yaml; a mismatch
// fails the test.
func contractChecked(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	c, err := apitest.New()
	if err != nil {
		t.Fatal(err)
	}
	c.Require(t, 0)
	return c.Handler(h)
}

package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFamilies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		title    string
		families func() []FamilyInfo
		want     string
	}{
		{"unset", nil, `{"families":[]}`},
		{"listed", func() []FamilyInfo {
			return []FamilyInfo{{Name: "game", Period: "all"}, {Name: "learning", Period: "week", Dimensions: []string{"national", "province"}}}
		}, `{"families":[{"name":"game","period":"all","dimensions":[]},{"name":"learning","period":"week","dimensions":["national","province"]}]}`},
	} {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			h, err := New(&fakeService{t: t}, Options{Families: tc.families})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/families", nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var got, want any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			check(t, "body", got, want)
		})
	}
}

func TestStatusPageRoutes(t *testing.T) {
	t.Parallel()
	h, err := New(&fakeService{t: t}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	do := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec
	}
	if rec := do("/ui"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d Location %q; want 301 to /ui/", rec.Code, rec.Header().Get("Location"))
	}
	rec := do("/ui/")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<title>rankgate status</title>") {
		t.Errorf("GET /ui/: %d %.200s", rec.Code, rec.Body)
	}
	for path, ctype := range map[string]string{"/ui/app.js": "javascript", "/ui/style.css": "text/css",
		"/ui/live.js": "javascript", "/ui/live.css": "text/css", "/ui/live/learning/current/national": "text/html"} {
		if rec := do(path); rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), ctype) {
			t.Errorf("GET %s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	if rec := do("/ui/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /ui/nope.js: %d, want 404", rec.Code)
	}
	// The big-screen live board: one page for every board, under the
	// status page's CSP.
	rec = do("/ui/live/learning/current/national")
	if !strings.Contains(rec.Body.String(), "<title>rankgate live</title>") ||
		!strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /ui/live/learning/current/national: %d CSP %q %.200s", rec.Code, rec.Header().Get("Content-Security-Policy"), rec.Body)
	}
	if rec := do("/ui/live/learning/current"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /ui/live/learning/current: %d, want 404", rec.Code)
	}
}

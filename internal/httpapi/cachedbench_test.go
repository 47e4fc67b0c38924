package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/teststack"
)

// discardWriter is a ResponseWriter that keeps nothing but the status and
// reuses its header map: what a cached read costs the handler stack alone.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header { return d.h }

func (d *discardWriter) WriteHeader(code int) { d.status = code }

func (d *discardWriter) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	d.n += len(p)
	return len(p), nil
}

func (d *discardWriter) reset() {
	clear(d.h)
	d.status, d.n = 0, 0
}

// BenchmarkCachedTop: a cached Top-100 of the 16-shard national board (the
// one bench-refresh reads) through the whole handler stack (httpapi,
// gateway, cache), without the HTTP server and its sockets, against a plain
// handler answering the same bytes. Allocations per read are what the
// cached path adds to net/http's own. Needs RANKGATE_TEST_REDIS_CLUSTER
// (skipped without it).
//
//	go test ./internal/httpapi -run '^$' -bench CachedTop -benchmem
func BenchmarkCachedTop(b *testing.B) {
	st := teststack.New(b, teststack.Options{Families: benchFamilies})
	var batch strings.Builder
	batch.WriteString(`{"events":[`)
	for i := range 500 {
		if i > 0 {
			batch.WriteByte(',')
		}
		fmt.Fprintf(&batch, `{"event_id":"e%d","family":"w16","user":"lt%d","delta":%d,"dims":{"province":"p%d","class":"c%d"}}`,
			i, i, 1+i%97, i%8, i%50)
	}
	batch.WriteString(`]}`)
	req := httptest.NewRequest(http.MethodPost, "/v1/events:batch", strings.NewReader(batch.String()))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	st.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("batch: %d %s", rec.Code, rec.Body.String())
	}
	const path = "/v1/boards/w16/current/national/top?consistency=cached&limit=100"
	for range 2 { // the second answer is a cache hit
		rec = httptest.NewRecorder()
		st.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("top: %d %s", rec.Code, rec.Body.String())
		}
	}
	body := rec.Body.Bytes()
	plain := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "max-age=1")
		_, _ = w.Write(body)
	})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"plain", plain}, {"gateway", st.Handler}} {
		b.Run(bc.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			r := httptest.NewRequest(http.MethodGet, path, nil)
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				bc.h.ServeHTTP(w, r)
				// (a refreshed copy's as_of may differ in its digits)
				if w.status != http.StatusOK || w.n < len(body)-16 || w.n > len(body)+16 {
					b.Fatalf("status %d, %d bytes (want about %d)", w.status, w.n, len(body))
				}
			}
		})
	}
}

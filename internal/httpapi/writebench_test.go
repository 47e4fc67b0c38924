package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/teststack"
)

// benchFamilies is deploy/bench-writes.yaml's family: every event writes a
// 16-shard national board, a province and a class board.
const benchFamilies = `  w16:
    source: events
    aggregate: sum
    order: desc
    period: week
    timezone: UTC
    tie: first
    rank: competition
    max_points: 8388607
    seq_capacity: 1073741824
    cache_ttl: 1s
    dimensions:
      national: {shards: 16}
      province: {shards: 1}
      class: {shards: 1}
`

// BenchmarkWritePath: POST /v1/events and POST /v1/events:batch (100 events)
// through the whole handler stack (httpapi, gateway, store) on the test
// cluster, without the HTTP server and its sockets. cpu-µs/write is this
// process's CPU (user + system) per event written: the gateway's own cost,
// Redis's left out. The load tool's world: 100 000 members, 8 provinces, 50
// classes. Needs RANKGATE_TEST_REDIS_CLUSTER (skipped without it).
//
//	go test ./internal/httpapi -run '^$' -bench WritePath -benchmem -cpuprofile /tmp/w.pprof
func BenchmarkWritePath(b *testing.B) {
	st := teststack.New(b, teststack.Options{Families: benchFamilies})
	event := func(id string, i int) []byte {
		return fmt.Appendf(nil, `{"event_id":%q,"family":"w16","user":"lt%d","delta":%d,"dims":{"province":"p%d","class":"c%d"}}`,
			id, (i*7919)%100000, 1+i%20, i%8, i%50)
	}
	post := func(b *testing.B, path string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		st.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	run := func(b *testing.B, perOp int, op func(b *testing.B, n int)) {
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		n := 0
		for b.Loop() {
			op(b, n)
			n++
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime) - syscall.TimevalToNsec(ru0.Utime) +
			syscall.TimevalToNsec(ru1.Stime) - syscall.TimevalToNsec(ru0.Stime))
		b.ReportMetric(float64(cpu.Microseconds())/float64(n*perOp), "cpu-µs/write")
	}
	run0 := time.Now().UnixNano()
	b.Run("event", func(b *testing.B) {
		run(b, 1, func(b *testing.B, n int) {
			post(b, "/v1/events", event(fmt.Sprintf("e%d.%d", run0, n), n))
		})
	})
	b.Run("batch100", func(b *testing.B) {
		var buf bytes.Buffer
		run(b, 100, func(b *testing.B, n int) {
			buf.Reset()
			buf.WriteString(`{"events":[`)
			for i := range 100 {
				if i > 0 {
					buf.WriteByte(',')
				}
				buf.Write(event(fmt.Sprintf("b%d.%d.%d", run0, n, i), n*100+i))
			}
			buf.WriteString(`]}`)
			post(b, "/v1/events:batch", buf.Bytes())
		})
	})
}

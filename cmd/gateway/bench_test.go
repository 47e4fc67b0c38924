package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// benchGateway serves the real handler stack (httpapi → gateway → store) on
// a loopback listener, over a real cluster, with one seeded board.
func benchGateway(b *testing.B) (*httptest.Server, []byte) {
	b.Helper()
	addrs := testcluster.Addrs(b)
	y := fmt.Sprintf(`listen: "127.0.0.1:0"
redis:
  addrs: [%q]
  prefix: %q
families:
  hot:
    period: all
    cache_ttl: 1s
    dimensions:
      national: {shards: 16}
`, addrs[0], testcluster.Prefix(b))
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		b.Fatal(err)
	}
	c, err := store.NewClient(store.ClientOptions{Addrs: addrs, Cluster: true, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	st, err := store.New(c, nil, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := gateway.New(gateway.Options{Config: cfg, Backend: st})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]gateway.Event, 0, 1000)
	for i := 0; i < 1000; i++ {
		d := int64(i%50 + 1)
		evs = append(evs, gateway.Event{EventID: fmt.Sprintf("e%d", i), Family: "hot", User: fmt.Sprintf("u%d", i), Delta: &d})
	}
	if _, err := svc.ApplyBatch(context.Background(), evs); err != nil {
		b.Fatal(err)
	}
	h, err := httpapi.New(svc, httpapi.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/v1/boards/hot/all/national/top?limit=10")
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("top: %d %s", resp.StatusCode, body)
	}
	return srv, body
}

func hammer(b *testing.B, url string) {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.SetParallelism(16)
	b.ReportAllocs()
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkHTTPTop10 compares, in one run, a cached Top-10 through the whole
// gateway with a plain net/http handler that writes the same bytes:
//
//	go test ./cmd/gateway -run '^$' -bench HTTPTop10 -benchtime 5s
func BenchmarkHTTPTop10(b *testing.B) {
	srv, body := benchGateway(b)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=1")
		_, _ = io.Copy(w, bytes.NewReader(body))
	}))
	b.Cleanup(plain.Close)
	b.Run("plain", func(b *testing.B) { hammer(b, plain.URL+"/top") })
	b.Run("gateway_cached", func(b *testing.B) { hammer(b, srv.URL+"/v1/boards/hot/all/national/top?limit=10") })
	b.Run("gateway_primary", func(b *testing.B) {
		hammer(b, srv.URL+"/v1/boards/hot/all/national/top?limit=10&consistency=primary")
	})
}

// window sends GETs to url from conc goroutines for d and returns how many
// completed with 200.
func window(client *http.Client, url string, conc int, d time.Duration) (int64, error) {
	var n atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				resp, err := client.Get(url)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					firstErr.CompareAndSwap(nil, fmt.Errorf("status %d", resp.StatusCode))
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return n.Load(), nil
}

// BenchmarkHTTPTop10Ratio measures the cached Top-10 through the gateway
// against a plain net/http handler writing the same bytes, alternating
// 250 ms windows of each for 20 rounds so that the shared machine's load
// drift hits both alike; it reports both rates and their ratio:
//
//	go test ./cmd/gateway -run '^$' -bench HTTPTop10Ratio -benchtime 1x
func BenchmarkHTTPTop10Ratio(b *testing.B) {
	srv, body := benchGateway(b)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=1")
		_, _ = io.Copy(w, bytes.NewReader(body))
	}))
	b.Cleanup(plain.Close)
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	gw := srv.URL + "/v1/boards/hot/all/national/top?limit=10"
	const rounds, conc, d = 20, 32, 250 * time.Millisecond
	for i := 0; i < b.N; i++ {
		var np, ng int64
		for r := 0; r < rounds; r++ {
			a, err := window(client, plain.URL+"/top", conc, d)
			if err != nil {
				b.Fatal(err)
			}
			g, err := window(client, gw, conc, d)
			if err != nil {
				b.Fatal(err)
			}
			np, ng = np+a, ng+g
		}
		secs := float64(rounds) * d.Seconds()
		b.ReportMetric(float64(np)/secs, "plain_req/s")
		b.ReportMetric(float64(ng)/secs, "gateway_req/s")
		b.ReportMetric(float64(ng)/float64(np), "ratio")
	}
}

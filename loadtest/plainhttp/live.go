package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// pusher holds the GET /live streams and writes their events.
type pusher struct {
	body []byte // every event's data
	mu   sync.Mutex
	subs map[*plainStream]struct{}
}

// plainStream is one GET /live: its connection, taken over from net/http.
type plainStream struct {
	conn net.Conn
	rate float64 // the chance of an event per round
	id   uint64  // the last event id written
	head []byte
}

func newPusher(body []byte) *pusher {
	return &pusher{body: body, subs: map[*plainStream]struct{}{}}
}

var (
	streamStart = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
	eventEnd    = []byte("\n\n")
)

// serve opens a stream: GET /live?rate=R (0..1, default 1). The status line
// and a snapshot go out at once; the stream then gets an event in a round
// with probability R, until its client goes.
func (p *pusher) serve(w http.ResponseWriter, r *http.Request) {
	rate := 1.0
	if v := r.URL.Query().Get("rate"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			http.Error(w, "rate: want a number within 0..1", http.StatusBadRequest)
			return
		}
		rate = f
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "live streams need HTTP/1.x", http.StatusHTTPVersionNotSupported)
		return
	}
	s := &plainStream{conn: conn, rate: rate}
	if err := s.write(streamStart, s.header("snapshot"), p.body, eventEnd); err != nil {
		_ = conn.Close()
		return
	}
	p.mu.Lock()
	p.subs[s] = struct{}{}
	p.mu.Unlock()
	// Its own goroutine reads the connection, to see the client go.
	go func() {
		var b [64]byte
		for {
			if _, err := conn.Read(b[:]); err != nil {
				break
			}
		}
		p.mu.Lock()
		delete(p.subs, s)
		p.mu.Unlock()
		_ = conn.Close()
	}()
}

// header renders the id, event and data-prefix lines of the next event.
func (s *plainStream) header(typ string) []byte {
	s.id++
	h := append(s.head[:0], "id: "...)
	h = strconv.AppendUint(h, s.id, 10)
	h = append(h, "\nevent: "...)
	h = append(h, typ...)
	h = append(h, "\ndata: "...)
	s.head = h
	return h
}

// write sends parts in one writev.
func (s *plainStream) write(parts ...[]byte) error {
	b := net.Buffers(parts)
	_, err := b.WriteTo(s.conn)
	return err
}

// run writes a round of events every interval until stop is closed.
func (p *pusher) run(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.round(rand.Float64)
		}
	}
}

// round writes an event to each stream drawn (draw() < its rate), split
// over GOMAXPROCS goroutines; a stream whose write fails is closed (its
// reader then removes it).
func (p *pusher) round(draw func() float64) int {
	p.mu.Lock()
	var picked []*plainStream
	for s := range p.subs {
		if draw() < s.rate {
			picked = append(picked, s)
		}
	}
	p.mu.Unlock()
	parts := max(1, min(runtime.GOMAXPROCS(0), len(picked)/256))
	var wg sync.WaitGroup
	for part := range parts {
		wg.Go(func() {
			for i := part; i < len(picked); i += parts {
				s := picked[i]
				if err := s.write(s.header("update"), p.body, eventEnd); err != nil {
					_ = s.conn.Close()
				}
			}
		})
	}
	wg.Wait()
	return len(picked)
}

// metrics renders the process's CPU seconds (user + system) and heap in
// use, under the names the gateway's /metrics uses.
func metrics() []byte {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Appendf(nil, "process_cpu_seconds_total %g\ngo_memstats_heap_inuse_bytes %d\n", cpu, ms.HeapInuse)
}

//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/rank"
)

// Scenario 7: maxmemory reached under noeviction: writes answer 503
// unavailable, reads keep working; a master set to allkeys-lru makes Ready
// (/readyz) fail. Settings are restored after.
func TestMaxMemory(t *testing.T) {
	c := getCluster(t, baseMaxMemory)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, c, stackOptions{})
	h, err := httpapi.New(s.svc, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := newLoad(s, "oom", loadConfig{})
	l.seed(t)
	tp, err := c.topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	masters := tp.masters()
	restore := func() error {
		for _, m := range masters {
			if err := c.node(m).ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
				return err
			}
			if err := c.node(m).ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
				return err
			}
		}
		return nil
	}
	t.Cleanup(func() { _ = restore() })

	const headroom = 256 << 10
	for _, m := range masters {
		info, err := c.node(m).Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		used, _ := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
		if err := c.node(m).ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+headroom, 10)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("maxmemory = used_memory + %d KiB on masters %s (noeviction)", headroom>>10, joinPorts(masters))

	// Fill until the gateway refuses every write (bounded).
	var fillErr error
	accepted, batches := 0, 0
	deadline := time.Now().Add(45 * time.Second)
	for ; batches < 2000 && time.Now().Before(deadline); batches++ {
		evs := make([]gateway.Event, 100)
		for i := range evs {
			d := int64(1)
			u := (batches*100 + i) % users
			evs[i] = gateway.Event{EventID: fmt.Sprintf("oom-fill-%d-%d", batches, i), Family: family, User: userName(u), Delta: &d,
				Dims: map[string]string{"province": provinceOf(u)}}
		}
		items, err := s.svc.ApplyBatch(ctx, evs)
		if err != nil {
			fillErr = err
			break
		}
		refused := 0
		for _, it := range items {
			if it.Err != nil {
				refused++
				fillErr = it.Err
			}
		}
		accepted += len(items) - refused
		if refused == len(items) {
			break
		}
	}
	if fillErr == nil {
		t.Fatalf("writes never refused after %d batches (%d events accepted)", batches, accepted)
	}
	t.Logf("filled: %d events accepted in %d batches, then refused: %v", accepted, batches, fillErr)
	// used_memory breathes (client buffers): pin each master's limit at its
	// usage now, so that no write slips under it while we probe.
	for _, m := range masters {
		info, err := c.node(m).Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		used, _ := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
		limit, _ := strconv.ParseInt(infoField(info, "maxmemory"), 10, 64)
		if used < limit {
			if err := c.node(m).ConfigSet(ctx, "maxmemory", strconv.FormatInt(used, 10)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rank.CodeOf(fillErr) != rank.CodeUnavailable {
		t.Errorf("a write refused for memory answers %s, want unavailable: %v", rank.CodeOf(fillErr), fillErr)
	}

	do := func(method, path, body string) (int, http.Header, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body)).WithContext(ctx)
		req.RemoteAddr = "127.0.0.1:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, rec.Header(), m
	}
	writes503, writesOther, reads200, readsOther := 0, 0, 0, 0
	var message, otherWrite, otherRead string
	for i := 0; i < 20; i++ {
		u := i % users
		status, hdr, body := do("POST", "/v1/events", fmt.Sprintf(`{"event_id":"oom-http-%d","family":"f","user":%q,"delta":3,"dims":{"province":%q}}`,
			i, userName(u), provinceOf(u)))
		errObj, _ := body["error"].(map[string]any)
		if status == http.StatusServiceUnavailable && errObj["code"] == "unavailable" && hdr.Get("Retry-After") != "" {
			writes503++
			message, _ = errObj["message"].(string)
		} else {
			writesOther++
			otherWrite = fmt.Sprintf("%d %v", status, body)
		}
		for _, path := range []string{
			"/v1/boards/f/current/national/top?limit=10&consistency=primary",
			"/v1/boards/f/current/national/top?limit=10",
			"/v1/boards/f/current/national/members/" + userName(u),
		} {
			status, _, body := do("GET", path, "")
			if entries, ok := body["entries"].([]any); status == http.StatusOK && (!strings.Contains(path, "/top") || (ok && len(entries) > 0)) {
				reads200++
			} else {
				readsOther++
				otherRead = fmt.Sprintf("%s: %d %v", path, status, body)
			}
		}
	}
	t.Logf("under maxmemory: writes %d× 503 unavailable (%q), %d other; reads %d× 200, %d other", writes503, message, writesOther, reads200, readsOther)
	if writesOther > 0 {
		t.Errorf("%d writes under maxmemory did not answer 503 unavailable; last: %s", writesOther, otherWrite)
	}
	if readsOther > 0 {
		t.Errorf("%d reads failed under maxmemory; last: %s", readsOther, otherRead)
	}
	if err := s.svc.Ready(ctx); err != nil {
		t.Logf("Ready under maxmemory with noeviction: %v", err)
	}

	// Restore the memory limit: writes are accepted again.
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	d := int64(1)
	err = poll(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		_, err := s.svc.ApplyEvent(ctx, gateway.Event{EventID: "oom-after", Family: family, User: userName(0), Delta: &d,
			Dims: map[string]string{"province": provinceOf(0)}})
		return err == nil, err
	})
	if err != nil {
		t.Errorf("writes after restoring maxmemory: %v", err)
	}

	// An evicting policy on one master: not ready.
	lru := masters[0]
	if err := c.node(lru).ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	readyErr := s.svc.Ready(ctx)
	rz, _, rzBody := do("GET", "/readyz", "")
	if readyErr == nil || rz != http.StatusServiceUnavailable {
		t.Errorf("allkeys-lru on %d: Ready() = %v, /readyz %d %v; want not ready", lru, readyErr, rz, rzBody)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	readyAfter := s.svc.Ready(ctx)
	rz2, _, _ := do("GET", "/readyz", "")
	if readyAfter != nil || rz2 != http.StatusOK {
		t.Errorf("after restoring noeviction: Ready() = %v, /readyz %d", readyAfter, rz2)
	}
	na := outage{na: true}
	t.Log(resultLine("7 maxmemory under noeviction; allkeys-lru readiness", s.mode(), na, na,
		"audit="+fmt.Sprintf("writes %d/%d answered 503 unavailable (message %q); reads %d/%d OK; allkeys-lru on %d: Ready=%v, /readyz %d; restored: /readyz %d",
			writes503, writes503+writesOther, message, reads200, reads200+readsOther, lru, readyErr, rz, rz2)))
}

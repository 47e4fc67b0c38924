package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/internal/live"
	"github.com/rankgate/rankgate/internal/rank"
)

// LiveHub is what the live route needs of the hub (*live.Hub).
type LiveHub interface {
	Subscribe(ctx context.Context, key string, q live.Query) (*live.Subscription, error)
}

var _ LiveHub = (*live.Hub)(nil)

// LiveOptions configure GET {board}/live.
type LiveOptions struct {
	// Hub serves the subscriptions; nil: the route answers 503 unavailable.
	Hub LiveHub
	// Heartbeat is the interval of ": ping" comments (live.heartbeat);
	// 0: 15s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a stream (live.write_timeout); it
	// replaces the server's write timeout for the stream. 0: 10s.
	WriteTimeout time.Duration
}

// liveRoute is the pattern of the live stream; TicketRoute marks it, so a
// browser may open it with ?ticket= instead of an Authorization header.
const liveRoute = "GET " + board + "/live"

// live answers GET {board}/live: a text/event-stream of the board's answer
// (see internal/live). Event ids increase along the stream; a reconnect with
// Last-Event-ID gets a fresh snapshot whose id follows the one it names.
func (s *server) live(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	top := q.int("top", defaultTopLimit)
	member, _ := q.str("member")
	radius := q.int("radius", defaultRadius)
	if q.err != nil {
		return q.err
	}
	if s.liveOpts.Hub == nil {
		return rank.Unavailable(nil, "live boards are not served by this gateway")
	}
	var id uint64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 63); err == nil {
			id = n
		}
	}
	key := ""
	if p, ok := PrincipalFrom(r.Context()); ok {
		key = p.Token
	}
	sub, err := s.liveOpts.Hub.Subscribe(r.Context(), key, live.Query{Board: boardOf(r), Top: top, Member: member, Radius: radius})
	if err != nil {
		return err
	}
	defer sub.Close()

	heartbeat, timeout := s.liveOpts.Heartbeat, s.liveOpts.WriteTimeout
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	rc := http.NewResponseController(w)
	write := func(b []byte) error {
		// Each write gets its own deadline: the server's write_timeout
		// would otherwise end a healthy stream, and a reader that stops
		// taking bytes is dropped within timeout.
		if err := rc.SetWriteDeadline(time.Now().Add(timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := write([]byte(": live\n\n")); err != nil {
		sub.Drop("write")
		return nil
	}
	event := func(typ string, data []byte) error {
		id++
		b := make([]byte, 0, len(data)+64)
		b = append(b, "id: "...)
		b = strconv.AppendUint(b, id, 10)
		b = append(b, "\nevent: "...)
		b = append(b, typ...)
		b = append(b, "\ndata: "...)
		b = append(b, data...)
		b = append(b, "\n\n"...)
		if err := write(b); err != nil {
			return err
		}
		sub.Sent(typ)
		return nil
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	typ := "snapshot"
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-sub.Done():
			final := "reconnect"
			if sub.Reason() == live.ReasonOverloaded {
				final = "overloaded"
			}
			_ = event(final, []byte("{}"))
			return nil
		case <-sub.Ready():
			data, ok := sub.Next()
			if !ok {
				continue
			}
			if err := event(typ, data); err != nil {
				sub.Drop("write")
				return nil
			}
			typ = "update"
		case <-ping.C:
			if err := write([]byte(": ping\n\n")); err != nil {
				sub.Drop("write")
				return nil
			}
		}
	}
}

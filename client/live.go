package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// LiveOptions shape a live stream (GET {board}/live).
type LiveOptions struct {
	// Top is the size of the Top N (0: the gateway's default, 10).
	Top int
	// Member, when set, adds that member's standing and the Radius
	// entries around them to every event.
	Member string
	Radius int
	// LastEventID resumes after a reconnect: the stream starts with a
	// fresh snapshot whose id follows it.
	LastEventID string
	// Ticket (from NewTicket) opens the stream in place of the token.
	Ticket string
}

// LiveEvent is one event of a live stream.
type LiveEvent struct {
	ID string
	// Type is "snapshot", "update", "overloaded" (the client fell behind;
	// the stream ends) or "reconnect" (the gateway shuts down; the stream
	// ends).
	Type string
	// Data is set for snapshot and update.
	Data *LiveData
}

// LiveData is the answer a snapshot or update carries.
type LiveData struct {
	Board  string    `json:"board"`
	AsOf   time.Time `json:"as_of"`
	Source string    `json:"source"`
	Top    Page      `json:"top"`
	// Member and Around are nil without LiveOptions.Member, and while the
	// member is not ranked.
	Member *MemberStanding `json:"member"`
	Around *Page           `json:"around"`
}

// LiveStream reads a live stream's events; Close it when done.
type LiveStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// Live opens a live stream of board b. A refusal (503 past the gateway's or
// the token's bound, 401 for a used ticket, ...) is an *Error. The stream
// is not bounded by the client's timeout; cancel ctx or Close it to end it.
func (c *Client) Live(ctx context.Context, b Board, o LiveOptions) (*LiveStream, error) {
	q := make([]string, 0, 4)
	if o.Top > 0 {
		q = append(q, "top="+strconv.Itoa(o.Top))
	}
	if o.Member != "" {
		q = append(q, "member="+esc(o.Member), "radius="+strconv.Itoa(o.Radius))
	}
	if o.Ticket != "" {
		q = append(q, "ticket="+esc(o.Ticket))
	}
	u := c.base + b.path() + "/live"
	if len(q) > 0 {
		u += "?" + strings.Join(q, "&")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" && o.Ticket == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if o.LastEventID != "" {
		req.Header.Set("Last-Event-ID", o.LastEventID)
	}
	hc := *c.hc
	hc.Timeout = 0 // a stream lasts; ctx ends it
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rankgate: GET %s/live: %w", b.path(), err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		return nil, errorOf(resp, data, 0)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &LiveStream{body: resp.Body, sc: sc}, nil
}

// Next returns the stream's next event (comments, such as pings, are
// skipped); io.EOF when the stream ended.
func (s *LiveStream) Next() (LiveEvent, error) {
	var ev LiveEvent
	var data string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.Type == "" {
				continue
			}
			if ev.Type == "snapshot" || ev.Type == "update" {
				ev.Data = new(LiveData)
				if err := json.Unmarshal([]byte(data), ev.Data); err != nil {
					return LiveEvent{}, fmt.Errorf("rankgate: live event %s: %w", ev.ID, err)
				}
			}
			return ev, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			ev.Type = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimPrefix(line[5:], " ")
		}
	}
	if err := s.sc.Err(); err != nil {
		return LiveEvent{}, err
	}
	return LiveEvent{}, io.EOF
}

// Close ends the stream.
func (s *LiveStream) Close() error { return s.body.Close() }

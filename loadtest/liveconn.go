package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/client"
)

// rawLive is a live stream read straight off its connection (-client conn
// in the live scenario): the stream's own goroutine reads it, lines land
// in one buffer it reuses, and an event's data is decoded only for what
// the scenario reads of it (the followed member's points). Through
// net/http's Transport each event also wakes the connection's reader
// goroutine and passes a pipe, and the client library decodes every
// event whole: with 10 000 streams on the gateway's own 2 cores, the load
// tool's reading weighed on the delivery delays it measured.
type rawLive struct {
	conn net.Conn
	br   *bufio.Reader
	long []byte // a line longer than br's buffer, gathered
	data []byte // the data of the event being read
}

// errChunked: the answer came chunked (a proxy between?); the raw reader
// reads streams delimited by the connection only.
var errChunked = errors.New("a chunked live stream: use -client transport")

// liveStatusError is a stream refused with an HTTP status.
type liveStatusError struct{ code int }

func (e *liveStatusError) Error() string { return fmt.Sprintf("live stream refused: HTTP %d", e.code) }

// openRawLive opens the live stream of board b on gateway base (http://
// only), the same request the client library sends.
func openRawLive(ctx context.Context, base string, b client.Board, o client.LiveOptions) (*rawLive, error) {
	q := url.Values{}
	if o.Top > 0 {
		q.Set("top", strconv.Itoa(o.Top))
	}
	if o.Member != "" {
		q.Set("member", o.Member)
		q.Set("radius", strconv.Itoa(o.Radius))
	}
	path := "/v1/boards/" + url.PathEscape(b.Family) + "/" + url.PathEscape(b.Period) + "/" + url.PathEscape(b.Dimension) + "/live"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return openRawPath(ctx, base, path)
}

// openRawPath opens the event stream at path on base (http:// only).
func openRawPath(ctx context.Context, base, path string) (*rawLive, error) {
	u, addr, err := plainAddr(base)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &rawLive{conn: conn, br: bufio.NewReaderSize(conn, 4<<10)}
	if err := s.open(u.Host, path); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return s, nil
}

func (s *rawLive) open(host, path string) error {
	// The handshake is bounded; the stream then lasts until closed.
	if err := s.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\n\r\n"
	if _, err := s.conn.Write([]byte(req)); err != nil {
		return err
	}
	status, err := s.line()
	if err != nil {
		return err
	}
	if len(status) < 12 || !bytes.HasPrefix(status, []byte("HTTP/1.")) || status[8] != ' ' {
		return errMalformed
	}
	code, err := strconv.Atoi(string(status[9:12]))
	if err != nil {
		return errMalformed
	}
	if code != 200 {
		return &liveStatusError{code: code}
	}
	for {
		h, err := s.line()
		if err != nil {
			return err
		}
		if len(h) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(k, []byte("Transfer-Encoding")) &&
			bytes.Contains(bytes.ToLower(v), []byte("chunked")) {
			return errChunked
		}
	}
	return s.conn.SetDeadline(time.Time{})
}

// line reads one line without its line end (valid until the next call).
func (s *rawLive) line() ([]byte, error) {
	l, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], l...)
		for errors.Is(err, bufio.ErrBufferFull) {
			l, err = s.br.ReadSlice('\n')
			s.long = append(s.long, l...)
		}
		l = s.long
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(l, "\r\n"), nil
}

// Event types, without an allocation per event.
var liveTypes = []string{"snapshot", "update", "overloaded", "reconnect"}

// next reads the next event (comments such as pings skipped): its type and
// data (valid until the next call).
func (s *rawLive) next() (typ string, data []byte, err error) {
	s.data = s.data[:0]
	for {
		l, err := s.line()
		if err != nil {
			return "", nil, err
		}
		switch {
		case len(l) == 0:
			if typ != "" {
				return typ, s.data, nil
			}
		case l[0] == ':':
		case bytes.HasPrefix(l, []byte("event:")):
			t := bytes.TrimSpace(l[len("event:"):])
			typ = string(t) // an unknown type: allocated, rare
			for _, k := range liveTypes {
				if string(t) == k {
					typ = k
				}
			}
		case bytes.HasPrefix(l, []byte("data:")):
			s.data = append(s.data, bytes.TrimPrefix(l[len("data:"):], []byte(" "))...)
		}
	}
}

func (s *rawLive) close() { _ = s.conn.Close() }

// memberPoints returns the followed member's points in a live event's data
// (false when the event carries no standing: top only, or not ranked). It
// reads the "points" of the "member" object without decoding the rest: a
// key's quote cannot appear unescaped inside a JSON string, so the first
// `"points":` after `,"member":{` is that object's own (its fields before
// points are the read metadata and the user id: no object holds one).
func memberPoints(data []byte) (int64, bool) {
	i := bytes.Index(data, []byte(`,"member":{`))
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(`,"member":{`):]
	j := bytes.Index(rest, []byte(`"points":`))
	if j < 0 {
		return 0, false
	}
	rest = rest[j+len(`"points":`):]
	k := 0
	for k < len(rest) && (rest[k] == '-' || rest[k] >= '0' && rest[k] <= '9') {
		k++
	}
	n, err := strconv.ParseInt(string(rest[:k]), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

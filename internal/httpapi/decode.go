package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// maxBody bounds every request body (api/openapi.yaml: over 1 MiB is a 413).
const maxBody = 1 << 20

var errTooLarge = &rank.Error{Code: rank.CodeTooLarge, Message: "request body exceeds 1 MiB"}

// decodeBody decodes exactly one JSON value from the request body into dst,
// refusing unknown fields, trailing data and bodies over maxBody.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	data, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeValue(data, "", dst)
}

// readBody reads a non-empty request body of at most maxBody bytes. A body
// declared larger is refused unread; one that turns out larger is marked
// refused. Either way the server lingers on the rest after answering (see
// lingerBytes).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBody {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			refuseBody(w)
			return nil, errTooLarge
		}
		return nil, rank.Invalid("", "reading request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, rank.Invalid("", "request body is empty; a JSON object is required")
	}
	return data, nil
}

// decodeValue strictly decodes data, which must hold exactly one JSON value.
// Field names in errors are put under prefix (e.g. "events[3]").
func decodeValue(data []byte, prefix string, dst any) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return rank.Invalid(prefix, "a JSON object is required, not null")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(data, err, prefix)
	}
	if _, err := dec.Token(); err != io.EOF {
		return rank.Invalid(prefix, "unexpected data after the JSON value")
	}
	return nil
}

// jsonError turns a decoding error into a 400 naming the field when it can.
func jsonError(data []byte, err error, prefix string) error {
	var (
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &typeErr):
		field := joinPath(prefix, jsonPath(typeErr.Field))
		if strings.HasPrefix(typeErr.Value, "number") && isIntKind(typeErr.Type.String()) {
			return rank.Invalid(field, "%s must be an integer within int64, got %s",
				nameOf(field), strings.TrimPrefix(typeErr.Value, "number "))
		}
		return rank.Invalid(field, "%s must be %s, got %s", nameOf(field), jsonKind(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		field := joinPath(prefix, pathAt(data, syntaxErr.Offset))
		msg := syntaxErr.Error()
		if strings.Contains(msg, "numeric literal") || strings.Contains(msg, "character 'N'") || strings.Contains(msg, "character 'I'") {
			msg += " (NaN and Infinity are not JSON numbers)"
		}
		return rank.Invalid(field, "malformed JSON at byte %d: %s", syntaxErr.Offset, msg)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return rank.Invalid(prefix, "truncated JSON")
	}
	// encoding/json has no type for unknown fields: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if unq, uerr := strconv.Unquote(name); uerr == nil {
			name = unq
		}
		field := joinPath(prefix, name)
		return rank.Invalid(field, "unknown field %q", field)
	}
	return rank.Invalid(prefix, "invalid JSON: %v", err)
}

func joinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

func nameOf(field string) string {
	if field == "" {
		return "the request body"
	}
	return field
}

// jsonPath drops the names of embedded Go structs from a decoder's field
// path (Go ≥ 1.24 includes them): they are exported, so capitalised, and the
// API's JSON names are all lower case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// pathAt names the value a syntax error at offset sits in ("delta",
// "events[2].at"), by replaying the tokens before it; "" when it is the
// top level.
func pathAt(data []byte, offset int64) string {
	if offset < 1 || offset > int64(len(data)) {
		return ""
	}
	type frame struct {
		obj      bool
		key      string // object: the last key read
		afterKey bool   // object: a key was read and its value is not complete
		done     int    // array: values completed
	}
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].afterKey = false
			} else {
				stack[n-1].done++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data[:offset-1]))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].obj && !stack[top].afterKey {
			if k, ok := tok.(string); ok {
				stack[top].key, stack[top].afterKey = k, true
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			if top >= 0 {
				stack = stack[:top]
			}
			valueDone()
		default:
			valueDone()
		}
	}
	var b strings.Builder
	for _, f := range stack {
		switch {
		case f.obj && f.afterKey:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		case f.obj:
			return b.String() // the fault is at a key: name the object
		default:
			b.WriteString("[" + strconv.Itoa(f.done) + "]")
		}
	}
	return b.String()
}

func isIntKind(t string) bool {
	switch t {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}

func jsonKind(goType string) string {
	switch {
	case isIntKind(goType):
		return "an integer"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	default:
		return "an object"
	}
}

// eventJSON is the wire form of an event: "at" is read as a string so that a
// bad time is a 400 naming the field (time.Time's own decoder names none).
type eventJSON struct {
	gateway.Event
	At *string `json:"at,omitempty"`
}

func decodeEvent(data []byte, prefix string) (gateway.Event, error) {
	w, ok := fastEvent(data) // the common shape (fastjson.go)
	if !ok {
		w = eventJSON{}
		if err := decodeValue(data, prefix, &w); err != nil {
			return gateway.Event{}, err
		}
	}
	ev, ok := eventOf(w)
	if !ok {
		return gateway.Event{}, badAt(prefix, *w.At)
	}
	return ev, nil
}

// badAt is the error of an "at" that is not an RFC 3339 time.
func badAt(prefix, at string) error {
	field := joinPath(prefix, "at")
	return rank.Invalid(field, "%s must be an RFC 3339 time, got %q", field, at)
}

// parseTime reads an RFC 3339 time. A space where the offset sign should be
// is read as '+': an unescaped '+' in a query string arrives as a space, and
// RFC 3339 has no spaces.
func parseTime(s string) (time.Time, error) {
	return time.Parse(time.RFC3339, strings.ReplaceAll(s, " ", "+"))
}

// params reads query parameters strictly, keeping the first error.
type params struct {
	v   url.Values
	err error
}

func newParams(r *http.Request) *params {
	v, err := url.ParseQuery(r.URL.RawQuery)
	p := &params{v: v}
	if err != nil {
		p.err = rank.Invalid("", "malformed query string: %v", err)
	}
	return p
}

func (p *params) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// str returns the single value of name and whether it was given.
func (p *params) str(name string) (string, bool) {
	vs, ok := p.v[name]
	if !ok {
		return "", false
	}
	if len(vs) > 1 {
		p.fail(rank.Invalid(name, "%s is given more than once", name))
	}
	return vs[0], true
}

func (p *params) int(name string, def int) int {
	s, ok := p.str(name)
	if !ok {
		return def
	}
	v, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		p.fail(rank.Invalid(name, "%s must be an integer, got %q", name, s))
		return def
	}
	return int(v)
}

func (p *params) int64(name string, def int64) int64 {
	s, ok := p.str(name)
	if !ok {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.fail(rank.Invalid(name, "%s must be an integer, got %q", name, s))
		return def
	}
	return v
}

// time returns the RFC 3339 time in name, or the zero time when absent.
func (p *params) time(name string) time.Time {
	s, ok := p.str(name)
	if !ok {
		return time.Time{}
	}
	t, err := parseTime(s)
	if err != nil {
		p.fail(rank.Invalid(name, "%s must be an RFC 3339 time, got %q", name, s))
	}
	return t
}

// readOptions reads the query parameters common to every read.
func (p *params) readOptions() gateway.ReadOptions {
	var o gateway.ReadOptions
	if s, ok := p.str("consistency"); ok {
		switch c := gateway.Consistency(s); c {
		case gateway.ConsistencyCached, gateway.ConsistencyReplica, gateway.ConsistencyPrimary, gateway.ConsistencyIndex:
			o.Consistency = c
		default:
			p.fail(rank.Invalid("consistency", "consistency must be cached, replica, primary or index, got %q", s))
		}
	}
	if s, ok := p.str("partial"); ok {
		if s != "allow" {
			p.fail(rank.Invalid("partial", "partial must be allow, got %q", s))
		}
		o.AllowPartial = s == "allow"
	}
	if s, ok := p.str("profiles"); ok {
		switch s {
		case "0":
		case "1":
			o.Profiles = true
		default:
			p.fail(rank.Invalid("profiles", "profiles must be 0 or 1, got %q", s))
		}
	}
	if s, ok := p.str("metadata"); ok {
		switch s {
		case "0":
		case "1":
			o.Metadata = true
		default:
			p.fail(rank.Invalid("metadata", "metadata must be 0 or 1, got %q", s))
		}
	}
	return o
}

// boardOf reads the board path values.
func boardOf(r *http.Request) gateway.BoardRef {
	return gateway.BoardRef{
		Family:    r.PathValue("family"),
		Period:    r.PathValue("period"),
		Dimension: r.PathValue("dimension"),
	}
}

// writeJSON answers v with status. v is marshalled before anything is
// written, so a marshalling failure is returned and can still be answered
// as a clean 500. A response is no-store unless the caller said otherwise.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var data []byte
	var err error
	if m, ok := v.(json.Marshaler); ok {
		// Pages encode themselves (cached pages hold their entries encoded
		// once): skip encoding/json's reflection and re-validation.
		data, err = m.MarshalJSON()
	} else {
		data, err = json.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encoding %T response: %w", v, err)
	}
	data = append(data, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_, _ = w.Write(data) // a client that went away is not our error
	return nil
}

package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/rankgate/rankgate/internal/rank"
)

// A cursor is the (score, member) of the last entry of a page, bound to the
// board and the query it came from ("entries", or "range" with its band) by a
// truncated SHA-256. It is opaque to clients; a tampered cursor or one from
// another board or query is 400 invalid_cursor. Forging one needs no secret,
// but a forged cursor can only seek to a place any range query could reach.
const cursorVersion = 1

type cursor struct {
	Score  int64
	Member string
}

func cursorMAC(scope string, payload []byte) []byte {
	h := sha256.New()
	h.Write([]byte("rankgate-cursor\x00"))
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(payload)
	return h.Sum(nil)[:8]
}

func encodeCursor(scope string, c cursor) string {
	b := make([]byte, 0, 1+8+len(c.Member)+8)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Score))
	b = append(b, c.Member...)
	b = append(b, cursorMAC(scope, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor checks a cursor against its scope; valid says which members
// the board can hold (stored members on a family with sort columns).
func decodeCursor(scope, s string, valid func(string) bool) (cursor, error) {
	bad := &rank.Error{Code: rank.CodeInvalidCursor, Field: "cursor", Message: "cursor is not valid for this board and query"}
	if len(s) > 256 {
		return cursor{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1+8+1+8 || b[0] != cursorVersion {
		return cursor{}, bad
	}
	payload, mac := b[:len(b)-8], b[len(b)-8:]
	want := cursorMAC(scope, payload)
	for i := range mac {
		if mac[i] != want[i] {
			return cursor{}, bad
		}
	}
	c := cursor{Score: int64(binary.BigEndian.Uint64(payload[1:9])), Member: string(payload[9:])}
	if !valid(c.Member) || c.Score > rank.MaxSafe || c.Score < -rank.MaxSafe {
		return cursor{}, bad
	}
	// One spelling per cursor: base64 decoding skips line breaks and ignores
	// stray trailing bits, which would let altered strings pass (and split
	// the cache across spellings of one page).
	if encodeCursor(scope, c) != s {
		return cursor{}, bad
	}
	return c, nil
}

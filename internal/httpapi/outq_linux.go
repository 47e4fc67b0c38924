//go:build linux

package httpapi

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unsentBytes returns the bytes of the connection's send queue the peer has
// not yet acknowledged (SIOCOUTQ), and false where that cannot be read (raw
// nil: not a socket).
func unsentBytes(raw syscall.RawConn) (int, bool) {
	if raw == nil {
		return 0, false
	}
	n, qerr := 0, error(nil)
	if err := raw.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
		return 0, false
	}
	return n, true
}

// canWritev: writevNow writes here.
const canWritev = true

// writevNow makes one writev of parts on the connection's non-blocking
// socket and answers the bytes it took: 0 and no error when it took none
// (its buffer is full). It never waits for the socket.
func writevNow(raw syscall.RawConn, parts [][]byte) (int, error) {
	var n int
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		n, werr = unix.Writev(int(fd), parts)
		return true // one try: never wait until writable
	})
	switch {
	case err != nil:
		return 0, err
	case werr == unix.EAGAIN:
		return 0, nil
	case werr != nil:
		return 0, werr
	}
	return max(n, 0), nil
}

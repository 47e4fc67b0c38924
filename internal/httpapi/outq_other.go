//go:build !linux

package httpapi

import "syscall"

// unsentBytes cannot read a socket's send queue on this system.
func unsentBytes(syscall.RawConn) (int, bool) { return 0, false }

// canWritev: no write without blocking on this system; the stream's
// goroutine writes every event.
const canWritev = false

func writevNow(syscall.RawConn, [][]byte) (int, error) { return 0, errWouldBlock }

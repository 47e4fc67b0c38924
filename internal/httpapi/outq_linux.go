//go:build linux

package httpapi

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unsentBytes returns the bytes of conn's send queue the peer has not yet
// acknowledged (SIOCOUTQ), and false where that cannot be read.
func unsentBytes(conn net.Conn) (int, bool) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	n, qerr := 0, error(nil)
	if err := raw.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
		return 0, false
	}
	return n, true
}

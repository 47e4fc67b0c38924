//go:build !linux

package httpapi

import "net"

// unsentBytes cannot read a socket's send queue on this system.
func unsentBytes(net.Conn) (int, bool) { return 0, false }

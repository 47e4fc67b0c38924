// Package testnet holds network helpers for tests.
//
// Test support: it imports the standard library only, no rankgate package;
// production code must not import it.
package testnet

import (
	"fmt"
	"syscall"
	"testing"
)

// RefusingAddr is a loopback host:port that is bound but not listening: a
// connection to it is refused, and no other server can take the port while
// the test runs. (The port of a test server just closed is no such address:
// the next server a parallel test starts may be given it, and answer.)
func RefusingAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("socket name %T", sa)
	}
	return fmt.Sprintf("127.0.0.1:%d", in4.Port)
}

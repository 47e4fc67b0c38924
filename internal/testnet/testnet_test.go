package testnet

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestRefusingAddr: a connection is refused, and a server cannot take the
// port while the test holds it.
func TestRefusingAddr(t *testing.T) {
	t.Parallel()
	addr := RefusingAddr(t)
	if _, err := net.DialTimeout("tcp", addr, 2*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a server could listen on %s", addr)
	}
}

// Package soon is the one polling helper of the tests: wait, bounded, until a
// condition holds (the model is CockroachDB's testutils.SucceedsSoon). A test
// that waits for something asynchronous calls Eventually instead of writing
// its own deadline loop; a helper that has no testing.TB calls Within.
//
// It owns only the retry loop: it imports nothing of rankgate and nothing
// outside the standard library.
package soon

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

const (
	firstWait = time.Millisecond       // the pause after the first failed try
	maxWait   = 100 * time.Millisecond // the pauses double up to this
)

// Stop marks err as final: Within returns it at once instead of trying
// again (the awaited thing can no longer happen, e.g. the process exited).
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Within calls fn until it returns nil or timeout has passed since the first
// call, pausing between tries (1 ms, doubling up to 100 ms). It returns nil
// once fn does, else fn's last error, wrapped with how long it was tried; an
// error made with Stop ends the wait at once, returning the error given to Stop.
// fn is always called at least once.
func Within(timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	wait := firstWait
	for tries := 1; ; tries++ {
		err := fn()
		if err == nil {
			return nil
		}
		if se := (stopError{}); errors.As(err, &se) {
			return se.err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("still failing after %s (%d tries): %w", timeout, tries, err)
		}
		time.Sleep(min(wait, time.Until(deadline)+time.Millisecond))
		wait = min(2*wait, maxWait)
	}
}

// Eventually is Within for a test: it fails tb (Fatal) with fn's last error
// when fn has not returned nil within timeout. fn runs on the calling
// goroutine, so it may itself call tb.Fatal to stop waiting at once.
func Eventually(tb testing.TB, timeout time.Duration, fn func() error) {
	tb.Helper()
	if err := Within(timeout, fn); err != nil {
		tb.Fatal(err)
	}
}

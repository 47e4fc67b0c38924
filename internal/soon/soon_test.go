package soon

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	t.Parallel()
	errNotYet := errors.New("not yet")
	cases := []struct {
		name      string
		okAfter   int // fn succeeds on this call (0: never)
		timeout   time.Duration
		wantErr   bool
		wantCalls func(int) bool
	}{
		{"first try", 1, time.Second, false, func(n int) bool { return n == 1 }},
		{"third try", 3, time.Second, false, func(n int) bool { return n == 3 }},
		{"never", 0, 20 * time.Millisecond, true, func(n int) bool { return n >= 2 }},
		{"zero timeout still tries once", 0, 0, true, func(n int) bool { return n == 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := Within(c.timeout, func() error {
				calls++
				if calls == c.okAfter {
					return nil
				}
				return errNotYet
			})
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if c.wantErr && (!errors.Is(err, errNotYet) || !strings.Contains(err.Error(), "tries")) {
				t.Errorf("err = %v, want the last error wrapped with the tries", err)
			}
			if !c.wantCalls(calls) {
				t.Errorf("%d calls", calls)
			}
		})
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	errGone := errors.New("the process exited")
	calls := 0
	err := Within(time.Minute, func() error {
		calls++
		if calls == 2 {
			return fmt.Errorf("waiting: %w", Stop(errGone))
		}
		return errors.New("not yet")
	})
	if calls != 2 || !errors.Is(err, errGone) {
		t.Errorf("Stop on the second try: %d calls, err %v; want 2 calls and the stopped error", calls, err)
	}
}

// fakeTB records Fatal instead of stopping the goroutine.
type fakeTB struct {
	testing.TB
	fatal string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestEventually(t *testing.T) {
	t.Parallel()
	ok := &fakeTB{}
	n := 0
	Eventually(ok, time.Second, func() error {
		if n++; n < 2 {
			return errors.New("once more")
		}
		return nil
	})
	if ok.fatal != "" || n != 2 {
		t.Errorf("a condition that holds on the second try: fatal %q after %d calls", ok.fatal, n)
	}
	bad := &fakeTB{}
	Eventually(bad, 10*time.Millisecond, func() error { return errors.New("never") })
	if !strings.Contains(bad.fatal, "never") {
		t.Errorf("a condition that never holds: fatal %q, want the last error", bad.fatal)
	}
}

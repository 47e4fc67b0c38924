package redissec

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rankgate/rankgate/internal/config"
)

// envAblate=1 adds the ablation run to TestGatewayOverTLSWithACLUser: the
// whole exercise once per granted command, with that one command taken away,
// proving each grant is needed (about 0.5 s per command).
const envAblate = "RANKGATE_REDISSEC_ABLATE"

// notExercised are granted commands the exercise cannot reach on a stable
// cluster: ASKING only follows an ASK redirect while a slot migrates.
var notExercised = []string{"asking"}

// ablate runs the exercise once per command of cmds as a user granted every
// other one, and fails unless each run is refused somewhere (a failed
// operation or an ACL LOG entry) — except for notExercised.
func ablate(t *testing.T, cl *tlsCluster, base *config.Config, cmds []string) {
	password := secret(t)
	for i, cmd := range cmds {
		prefix := fmt.Sprintf("ab%d", i)
		user := fmt.Sprintf("ablate%d", i)
		cl.setUser(t, user, password, prefix, Without(cmds, cmd))
		cfg := *base
		cfg.Redis.Prefix, cfg.Redis.Username, cfg.Redis.PasswordEnv = prefix, user, "ABLATE_PASSWORD"
		getenv := func(string) string { return password }

		soft := &softTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			sk := newStack(soft, cl, &cfg, getenv)
			sk.exercise(soft)
		}()
		<-done
		denied := cl.deniedObjects(t)
		needed := len(soft.errs) > 0 || len(denied) > 0
		switch {
		case needed && slices.Contains(notExercised, cmd):
			t.Logf("-%s: needed after all (%s)", cmd, summary(soft.errs, denied))
		case needed:
			t.Logf("-%s: refused as expected: %s", cmd, summary(soft.errs, denied))
		case slices.Contains(notExercised, cmd):
			t.Logf("-%s: not exercised (by design)", cmd)
		default:
			t.Errorf("-%s: the whole exercise passed without it; drop it from Commands or exercise what needs it", cmd)
		}
	}
}

func summary(errs, denied []string) string {
	var parts []string
	if len(denied) > 0 {
		slices.Sort(denied)
		parts = append(parts, "ACL LOG: "+strings.Join(slices.Compact(denied), ","))
	}
	if len(errs) > 0 {
		e := errs[0]
		if len(e) > 160 {
			e = e[:160] + "…"
		}
		parts = append(parts, fmt.Sprintf("%d failures, first: %s", len(errs), e))
	}
	return strings.Join(parts, "; ")
}

// softTB records failures instead of failing the test; Fatal stops the
// goroutine it runs in (which must not be the test's).
type softTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (s *softTB) Helper() {}

func (s *softTB) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

func (s *softTB) Error(args ...any) { s.Errorf("%s", fmt.Sprint(args...)) }

func (s *softTB) Fatalf(format string, args ...any) {
	s.Errorf(format, args...)
	runtime.Goexit()
}

func (s *softTB) Fatal(args ...any) {
	s.Error(args...)
	runtime.Goexit()
}

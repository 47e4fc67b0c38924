//go:build faults

package faults

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every scenario runs on a cluster of its own; the bases are 10 apart
// (ports BASE..BASE+5, cluster bus +10000). Never 7000, 7100 or 7400. The
// scenarios of issue 15 and scenario 12 use bases 7920–7980 (node timeout 1 s).
const (
	baseKillRedis   = 7500
	baseKillLedger  = 7510
	basePauseRedis  = 7520
	basePauseLedger = 7530
	basePauseShort  = 7540
	baseReplica     = 7550
	baseScripts     = 7560
	baseFlush       = 7570
	baseMaxMemory   = 7580
	baseLoop        = 7920
	basePostgres    = 7930
	baseGateways    = 7940
	baseIndexRedis  = 7950
	baseIndexLedger = 7980
)

var scenarioBases = []struct {
	test string
	base int
}{
	{"TestKillMaster", baseKillRedis},
	{"TestKillMaster", baseKillLedger},
	{"TestPauseMasterPastTimeout", basePauseRedis},
	{"TestPauseMasterPastTimeout", basePauseLedger},
	{"TestPauseMasterShort", basePauseShort},
	{"TestRestartReplica", baseReplica},
	{"TestScriptFlush", baseScripts},
	{"TestFlushMasterRebuild", baseFlush},
	{"TestMaxMemory", baseMaxMemory},
	{"TestFailoverLoop", baseLoop},
	{"TestPostgresFaults", basePostgres},
	{"TestManyGateways", baseGateways},
	{"TestIndexUnderFaults", baseIndexRedis},
	{"TestIndexUnderFaults", baseIndexLedger},
}

// selected reports whether -run (and -skip) select the top-level test name.
func selected(name string) bool {
	match := func(flagName string) (bool, bool) {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return false, false
		}
		pat := strings.Split(f.Value.String(), "/")[0]
		re, err := regexp.Compile(pat)
		if err != nil {
			return false, false
		}
		return re.MatchString(name), true
	}
	if m, set := match("test.run"); set && !m {
		return false
	}
	if m, set := match("test.skip"); set && m && !strings.Contains(flag.Lookup("test.skip").Value.String(), "/") {
		return false
	}
	return true
}

// TestMain starts the clusters of the selected scenarios at once, in the
// background (cluster.sh up spends most of its ~15 s waiting), so that they
// are ready when their tests begin; each test stops its own when it ends,
// and whatever is left is stopped here.
func TestMain(m *testing.M) {
	flag.Parse()
	redis.SetLogger(quietLogger{})
	var started []int
	if f := flag.Lookup("test.list"); f == nil || f.Value.String() == "" {
		sem := make(chan struct{}, len(scenarioBases))
		for _, sb := range scenarioBases {
			if selected(sb.test) {
				startClusterAsync(sb.base, sem)
				started = append(started, sb.base)
			}
		}
	}
	// Every cluster is up before the first scenario measures anything: no
	// cluster creation competes with a fault for the CPU.
	start := time.Now()
	for _, b := range started {
		futuresMu.Lock()
		f := futures[b]
		futuresMu.Unlock()
		select {
		case <-f.done:
		case <-time.After(clusterUpWait + 30*time.Second):
		}
	}
	if len(started) > 0 {
		fmt.Fprintf(os.Stderr, "faults: %d clusters (bases %v) started in %s\n", len(started), started, time.Since(start).Round(100*time.Millisecond))
	}
	code := m.Run()
	var wg sync.WaitGroup
	for _, b := range started {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			futuresMu.Lock()
			f := futures[b]
			futuresMu.Unlock()
			<-f.done
			if err := stopCluster(b); err != nil {
				fmt.Fprintf(os.Stderr, "faults: stopping cluster %d: %v\n", b, err)
			}
		}(b)
	}
	wg.Wait()
	os.Exit(code)
}

// quietLogger drops go-redis's own log lines (dial failures are expected
// here by the hundred); the load records every failure itself.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

package redissec

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the child if the test process dies
// before its cleanup runs (a go test timeout, say).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

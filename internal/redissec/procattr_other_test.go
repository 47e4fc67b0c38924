//go:build !linux

package redissec

import "os/exec"

// setDeathSignal is a no-op outside Linux: the test's cleanup stops the nodes.
func setDeathSignal(*exec.Cmd) {}

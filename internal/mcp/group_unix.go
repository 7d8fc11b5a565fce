//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the server in a process group of its own, so that what
// it starts can be stopped with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

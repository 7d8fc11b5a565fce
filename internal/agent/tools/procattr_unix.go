//go:build unix

package tools

import (
	"os"
	"os/exec"
	"syscall"
)

// groupGuard runs in the command's process group beside the command. It
// waits on a pipe whose other end only baton holds: a line on it means
// the command is over and baton lets its leftovers be; end of file means
// baton died (even by SIGKILL, which nothing can catch), and the guard
// kills the whole group. Its output goes nowhere, so it never holds the
// command's output open.
const groupGuard = `{ IFS= read -r _ <&3 || kill -KILL 0; } </dev/null >/dev/null 2>&1 3<&3 & exec 3<&-; exec bash -c "$1"`

// ownProcessGroup makes cmd (bash -c COMMAND) run in a new process group
// that a cancellation kills whole, not just bash, and that dies with this
// process. Call the returned release once cmd has been waited for.
func ownProcessGroup(cmd *exec.Cmd) (release func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	command := cmd.Args[len(cmd.Args)-1]
	cmd.Args = []string{cmd.Args[0], "-c", groupGuard, "baton-shell", command}
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return func() {
		r.Close()
		_, _ = w.Write([]byte("done\n"))
		w.Close()
	}, nil
}

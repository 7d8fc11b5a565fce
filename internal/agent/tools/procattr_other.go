//go:build !unix

package tools

import "os/exec"

// ownProcessGroup is a no-op where process groups are not available;
// cancellation kills only the shell itself.
func ownProcessGroup(*exec.Cmd) (func(), error) { return func() {}, nil }

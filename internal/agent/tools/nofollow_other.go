//go:build !unix

package tools

import (
	"os"
	"path/filepath"
)

// openResolved opens p; without openat this platform cannot refuse a
// link that appears after the check.
func openResolved(p string, flag int, perm os.FileMode, create bool) (*os.File, error) {
	if create {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
	}
	return os.OpenFile(p, flag, perm)
}

func linkCount(os.FileInfo) uint64 { return 1 }

//go:build unix

package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// openResolved opens p, an absolute path with every link already
// resolved, without following any link: each directory is opened beneath
// the one before it with O_NOFOLLOW, so a folder swapped for a link after
// the path was checked makes the open fail instead of carrying the write
// somewhere else. With create, missing directories are made on the way.
func openResolved(p string, flag int, perm os.FileMode, create bool) (*os.File, error) {
	dir, base := filepath.Split(filepath.Clean(p))
	if base == "" || !filepath.IsAbs(p) {
		return nil, fmt.Errorf("%s: not a file path", p)
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /: %w", err)
	}
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return nil, pathError(p, err)
		}
		fd = next
	}
	ffd, err := unix.Openat(fd, base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	unix.Close(fd)
	if err != nil {
		return nil, pathError(p, err)
	}
	return os.NewFile(uintptr(ffd), p), nil
}

// pathError says what a failed no-follow open means: a link where the
// checked path had a folder or a file is a path that moved.
func pathError(p string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s: a link appeared in the path after it was checked; not done", p)
	}
	return &os.PathError{Op: "open", Path: p, Err: err}
}

// linkCount is the number of names a file has (1 unless hard-linked).
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

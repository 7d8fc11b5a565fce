package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/baton-agent/baton/internal/store"
)

// Explain adds to err, met using the store at path, what is wrong and what
// to do, where SQLite's own words ("unable to open database file (14)",
// "disk I/O error (522)") leave a person with neither. Other errors come
// back as they are. A damaged file also becomes store.ErrDamaged.
func Explain(path string, err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) || errors.Is(err, store.ErrDamaged) || errors.Is(err, store.ErrLost) {
		return err
	}
	wal := path + "-wal"
	switch code := se.Code(); {
	case code&0xff == sqlite3.SQLITE_CORRUPT, code&0xff == sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", err, damaged(path, "SQLite finds it damaged (`baton doctor` runs its integrity check and says where)"))
	case code == sqlite3.SQLITE_IOERR_SHORT_READ:
		return fmt.Errorf("%w: the store's write-ahead log %s is missing or shorter than its index (%s-shm) says: "+
			"it was deleted or replaced while a baton process (the gateway, a terminal) had the store open. "+
			"Stop that process cleanly (`baton gateway stop`, or leave the terminal), never with kill -9: "+
			"a clean stop writes what it still holds of the log into %s. Then start baton again", err, wal, path, filepath.Base(path))
	case code == sqlite3.SQLITE_READONLY_DBMOVED:
		return fmt.Errorf("%w: %s was moved or deleted while baton had it open; stop baton cleanly and put it back before starting again", err, path)
	case code&0xff == sqlite3.SQLITE_CANTOPEN, code&0xff == sqlite3.SQLITE_READONLY:
		return fmt.Errorf("%w: %s", err, cannotWrite(path))
	case code&0xff == sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: the disk holding %s is full. Make room (`df -h %s` shows it), then try again: nothing stored before is lost",
			err, path, filepath.Dir(path))
	case code&0xff == sqlite3.SQLITE_IOERR:
		return fmt.Errorf("%w: the system failed to read or write %s or the files beside it (%s, %s-shm). "+
			"Check the disk (`df -h %s`; the kernel log, `dmesg`, names failing devices) and that no other program changed those files, "+
			"then run `baton doctor`", err, path, wal, path, filepath.Dir(path))
	}
	return err
}

// cannotWrite says why SQLite could not open the store for writing: the
// folder (SQLite makes its -wal and -shm files beside the store) or the
// file itself, and what to do.
func cannotWrite(path string) string {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Sprintf("the folder %s cannot be used (%v): create it, or point BATON_HOME (or store:) elsewhere", dir, err)
	} else if !fi.IsDir() {
		return fmt.Sprintf("%s is not a folder: point BATON_HOME (or store:) at a folder", dir)
	}
	if f, err := os.CreateTemp(dir, ".baton-write-check-*"); err != nil {
		return fmt.Sprintf("baton cannot write in %s (%v), and the store needs to: SQLite keeps %s-wal and %s-shm beside %s. "+
			"Make the folder yours and writable (`chmod u+w %s`), or point BATON_HOME at a writable folder",
			dir, errors.Unwrap(err), filepath.Base(path), filepath.Base(path), filepath.Base(path), dir)
	} else {
		f.Close()
		os.Remove(f.Name())
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Sprintf("baton cannot open %s to write (%v): make it yours and writable (`chmod u+rw %s`)", p, errors.Unwrap(err), p)
		}
		f.Close()
	}
	return fmt.Sprintf("SQLite cannot open %s or the files beside it for writing; check that %s and the files in it are yours and writable, "+
		"and that the disk is mounted read-write", path, dir)
}

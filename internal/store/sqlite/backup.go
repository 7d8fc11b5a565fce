package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the whole store to dest, a file that
// must not exist yet, while this and other processes go on using the
// store. A copy of state.db alone is not one: a running store keeps its
// latest writes in state.db-wal. SQLite's VACUUM INTO reads the store in
// one read transaction (a snapshot of every commit made before it began,
// log included; writers are not held up) and writes it compacted into a
// file of its own, with no log beside it. The copy is written beside dest
// and renamed into place once synced and checked, so dest is never a part
// of a copy.
func (s *Store) Backup(ctx context.Context, dest string) (Record, error) {
	dest, err := filepath.Abs(dest)
	if err != nil {
		return Record{}, fmt.Errorf("back up to %s: %w", dest, err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return Record{}, fmt.Errorf("back up to %s: the file exists; name a new file (baton never writes over one)", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("back up to %s: %w", dest, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".partial-*")
	if err != nil {
		return Record{}, fmt.Errorf("back up to %s: %w", dest, err)
	}
	name := tmp.Name()
	tmp.Close() // VACUUM INTO writes into an empty file; this one is 0600
	defer os.Remove(name)

	if _, err := s.r.ExecContext(ctx, "VACUUM INTO ?", name); err != nil {
		return Record{}, fmt.Errorf("back up to %s: %w", dest, Explain(s.path, err))
	}
	if err := syncFile(name); err != nil {
		return Record{}, fmt.Errorf("back up to %s: %w", dest, err)
	}
	held, err := checkCopy(ctx, name)
	if err != nil {
		return Record{}, fmt.Errorf("back up to %s: the copy does not check: %w", dest, err)
	}
	// The attachments' bytes go first, beside dest: a copy never names
	// bytes that are not beside it.
	if err := s.backupFiles(ctx, name, filepath.Join(filepath.Dir(dest), FilesDir)); err != nil {
		return Record{}, fmt.Errorf("back up to %s: attachments: %w", dest, err)
	}
	// A link, unlike a rename, never replaces a file made there meanwhile.
	if err := os.Link(name, dest); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Record{}, fmt.Errorf("back up to %s: the file exists; name a new file (baton never writes over one)", dest)
		}
		if rerr := os.Rename(name, dest); rerr != nil {
			return Record{}, fmt.Errorf("back up to %s: %w", dest, errors.Join(err, rerr))
		}
	}
	if d, err := os.Open(filepath.Dir(dest)); err == nil {
		_ = d.Sync() // the new name, durable too
		d.Close()
	}
	return held, nil
}

func syncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkCopy runs SQLite's integrity check on the copy at name and says
// what it holds.
func checkCopy(ctx context.Context, name string) (Record, error) {
	db, err := sql.Open("sqlite", name+"?mode=ro")
	if err != nil {
		return Record{}, err
	}
	defer db.Close()
	var ok string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&ok); err != nil {
		return Record{}, err
	}
	if ok != "ok" {
		return Record{}, errors.New(ok)
	}
	var r Record
	err = db.QueryRowContext(ctx, currentRecordSQL).Scan(&r.Store, &r.SessionsMade, &r.LastMessage, &r.Sessions)
	return r, err
}

// backupFiles puts the bytes of every attachment the copy at name names
// into dir: linked where the file system allows, else copied and synced.
// Bytes already there are the same bytes (their name is their hash).
func (s *Store) backupFiles(ctx context.Context, name, dir string) error {
	if same, err := sameDir(dir, s.FilesPath()); err != nil || same {
		return err
	}
	db, err := sql.Open("sqlite", name+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT sha256 FROM attachments UNION SELECT sha256 FROM inbound_files UNION SELECT sha256 FROM delivery_files`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sha string
		if err := rows.Scan(&sha); err != nil {
			return err
		}
		if !validSHA(sha) {
			continue
		}
		to := filepath.Join(dir, sha[:2], sha)
		if _, err := os.Stat(to); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if err := os.Link(s.filePath(sha), to); err == nil || errors.Is(err, fs.ErrExist) {
			continue
		}
		if err := copyFile(s.filePath(sha), to); err != nil {
			return err
		}
	}
	return rows.Err()
}

// sameDir reports whether a and b are one folder (b exists; a may not).
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// copyFile copies from to a new file to, whole or not at all.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(to), tempPrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), to); err != nil {
		return err
	}
	return syncDir(filepath.Dir(to))
}

// Package doctor checks a baton home the way `baton doctor` reports it:
// the configuration, the store's integrity, and that nothing private can
// be read by other users of the machine.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// Finding is one line of the report.
type Finding struct {
	OK   bool
	What string // what was checked, and what was found
	Fix  string // what to do about it; empty when OK
}

// checker is what a store offers when it can check its own integrity.
type checker interface {
	Check(ctx context.Context) error
}

// versioned is what a store offers when it has a schema version.
type versioned interface {
	SchemaVersion(ctx context.Context) (int, error)
}

// Check examines home and returns its findings in the order they are
// printed. It changes nothing: a home or store that does not exist yet is
// reported, not created.
func Check(ctx context.Context, home string) []Finding {
	var out []Finding
	add := func(ok bool, what, fix string) { out = append(out, Finding{OK: ok, What: what, Fix: fix}) }

	fi, err := os.Stat(home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add(true, "home "+home+" does not exist yet; baton makes it on the first run", "")
		return out
	case err != nil:
		add(false, "home "+home+": "+err.Error(), "check the path in BATON_HOME")
		return out
	case !fi.IsDir():
		add(false, "home "+home+" is not a directory", "point BATON_HOME at a directory")
		return out
	}
	out = append(out, privacy(home, fi)...)

	cfg, err := config.Load(home)
	if err == nil {
		err = cfg.CheckSections(all.Names())
	}
	if err != nil {
		add(false, "config: "+err.Error(), "fix "+filepath.Join(home, config.FileName))
		return out
	}
	add(true, "config "+filepath.Join(home, config.FileName)+" reads", "")
	out = append(out, checkMCP(ctx, cfg.MCP)...)

	url := app.StoreURL(cfg, os.Getenv)
	if app.IsPostgres(url) {
		return append(out, checkServerStore(ctx, home, url))
	}
	path, err := app.StorePath(home, url)
	if err != nil {
		add(false, "store: "+err.Error(), "fix store: in config.yaml or BATON_STORE")
		return out
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if rec, err := sqlite.ReadRecord(path); err == nil && rec.Held() {
			add(false, fmt.Sprintf("store %s is gone; its record (%s%s) says it held %s",
				path, path, sqlite.RecordSuffix, rec.Holding()),
				"restore "+path+" from a backup; or, to start afresh on purpose, rm "+path+sqlite.RecordSuffix)
		} else {
			add(true, "store "+path+" does not exist yet; baton makes it on the first run", "")
		}
	} else {
		out = append(out, checkStore(ctx, home, url, path)...)
	}

	c := control.NewClient(control.SocketPath(home))
	if s, err := c.Status(ctx); err == nil {
		add(true, fmt.Sprintf("gateway running (pid %d)", s.PID), "")
	} else {
		add(true, "gateway not running", "")
	}
	return out
}

// checkMCP starts each MCP server config.yaml names, as a turn would,
// lists its tools, and stops it again.
func checkMCP(ctx context.Context, cfg config.MCPConfig) []Finding {
	if len(cfg.Servers) == 0 {
		return nil
	}
	servers := mcp.New(cfg, mcp.Options{Dir: mustGetwd()})
	defer servers.Close()
	servers.Tools(ctx)
	var out []Finding
	for _, st := range servers.Status() {
		st.Retry = time.Time{} // this check is over before any retry
		line := "mcp server " + strings.TrimPrefix(mcp.StatusLine(st), "• ")
		if st.State == mcp.Running {
			out = append(out, Finding{OK: true, What: line})
			continue
		}
		out = append(out, Finding{What: line, Fix: "check mcp.servers." + st.Name + " in config.yaml; run its command (or open its url) by hand to see what it says"})
	}
	return out
}

func mustGetwd() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	return dir
}

func checkStore(ctx context.Context, home, url, path string) []Finding {
	// Before opening, which makes a new log: SQLite removes the log and
	// its index together when the last process closes the store, so an
	// index without its log means the log was deleted.
	var out []Finding
	if _, err := os.Stat(path + "-shm"); err == nil {
		if _, err := os.Stat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
			out = append(out, Finding{
				What: "store " + path + " is missing its write-ahead log " + path + "-wal (its index " + path + "-shm is there): " +
					"the log was deleted, or the store copied without it; what it held since the last checkpoint is not in " + path,
				Fix: "if a baton process still runs, stop it cleanly (baton gateway stop; not kill -9): it writes the log it still holds into the store; " +
					"otherwise restore the store from a backup (baton backup FILE makes one)",
			})
		}
	}
	st, err := app.OpenStore(ctx, home, url, sqlite.ForInspection())
	if err != nil {
		fix := "see the message above"
		switch {
		case errors.Is(err, store.ErrLost):
			fix = "restore " + path + " from a backup; or, to go on with it as it is, rm " + path + sqlite.RecordSuffix
		case errors.Is(err, store.ErrDamaged):
			fix = "restore " + path + " from a backup, or move it away to start afresh"
		}
		return append(out, Finding{What: "store: " + err.Error(), Fix: fix})
	}
	defer st.Close()
	what := "store " + path
	if v, ok := st.(versioned); ok {
		if n, err := v.SchemaVersion(ctx); err == nil {
			what += fmt.Sprintf(" (schema %d)", n)
		}
	}
	if c, ok := st.(checker); ok {
		if err := c.Check(ctx); err != nil {
			return append(out, Finding{What: what + ": " + err.Error(), Fix: "restore " + path + " from a backup"})
		}
		what += ": integrity ok"
	}
	return append(out, Finding{OK: true, What: what}, record(ctx, st, path))
}

// checkServerStore opens a store on a Postgres server: that it answers,
// at which schema. The server's own tools check its files and keep its
// backups.
func checkServerStore(ctx context.Context, home, url string) Finding {
	st, err := app.OpenStore(ctx, home, url)
	if err != nil {
		return Finding{What: "store: " + err.Error(), Fix: "check the server, and store: in config.yaml or BATON_STORE"}
	}
	defer st.Close()
	what := "store " + postgres.Redact(strings.TrimSpace(url)) + " answers"
	if v, ok := st.(versioned); ok {
		if n, err := v.SchemaVersion(ctx); err == nil {
			what += fmt.Sprintf(" (schema %d)", n)
		}
	}
	return Finding{OK: true, What: what}
}

// recorder is what a store offers when it keeps a record of what it held
// beside it (a store that lost part of it is refused at open).
type recorder interface {
	Record(ctx context.Context) (sqlite.Record, error)
}

// record reports the store against its record.
func record(ctx context.Context, st store.Store, path string) Finding {
	r, ok := st.(recorder)
	if !ok {
		return Finding{OK: true, What: "store keeps no record of what it held"}
	}
	cur, err := r.Record(ctx)
	if err != nil {
		return Finding{What: "store record: " + err.Error(), Fix: "run baton doctor again; if it stays, restore " + path + " from a backup"}
	}
	rec, err := sqlite.ReadRecord(path)
	switch {
	case err != nil:
		return Finding{What: "store record: " + err.Error(), Fix: "check the permissions of " + path + sqlite.RecordSuffix}
	case rec == nil:
		return Finding{OK: true, What: fmt.Sprintf("store holds %s; no record of it yet (%s%s): baton writes one when it next opens the store",
			cur.Holding(), path, sqlite.RecordSuffix)}
	}
	return Finding{OK: true, What: fmt.Sprintf("store record %s%s (written %s) agrees: the store holds %s",
		path, sqlite.RecordSuffix, rec.At.Local().Format("2006-01-02 15:04"), cur.Holding())}
}

// privacy reports home and the files in it that others could read: the
// store holds every conversation, and the web token and config hold
// secrets.
func privacy(home string, fi fs.FileInfo) []Finding {
	var out []Finding
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		out = append(out, Finding{What: fmt.Sprintf("home %s can be read by others (mode %#o)", home, m), Fix: "chmod 700 " + home})
	} else {
		out = append(out, Finding{OK: true, What: fmt.Sprintf("home %s is private (mode %#o)", home, m)})
	}
	entries, err := os.ReadDir(home)
	if err != nil {
		return append(out, Finding{What: "home: " + err.Error(), Fix: "check the permissions of " + home})
	}
	// ReadDir sorts by name: the report reads the same every time.
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o077 == 0 {
			continue
		}
		p := filepath.Join(home, e.Name())
		out = append(out, Finding{What: fmt.Sprintf("%s can be read by others (mode %#o)", p, info.Mode().Perm()), Fix: "chmod 600 " + p})
	}
	return out
}

// Print writes findings one per line and returns how many need fixing.
func Print(w io.Writer, fs []Finding) (problems int) {
	for _, f := range fs {
		if f.OK {
			fmt.Fprintf(w, "ok    %s\n", f.What)
			continue
		}
		problems++
		fmt.Fprintf(w, "FIX   %s\n      → %s\n", f.What, f.Fix)
	}
	return problems
}

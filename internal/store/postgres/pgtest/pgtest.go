// Package pgtest gives tests a fresh, empty database on a real Postgres
// server.
//
// With BATON_TEST_POSTGRES set (a postgres:// URL of a server where the
// test may CREATE DATABASE) it uses that server. Otherwise it starts one
// server per test binary from the Postgres found on PATH or in
// /usr/lib/postgresql/*/bin: initdb into a temporary directory, listening
// only on 127.0.0.1 on a free port, its socket in that directory; run as
// the postgres (or nobody) system user when the tests run as root, which
// Postgres refuses to run as. Main stops it and removes the directory when
// the package's tests end. Without Postgres a test is skipped, except
// under CI=true, where that is a failure naming what to install.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable giving an existing server to test against.
const EnvURL = "BATON_TEST_POSTGRES"

// EnvDurable, set to 1, makes the server started here sync every commit
// (for benchmarks beside the SQLite store, which does); tests run
// without syncs, as nothing they check needs a power cut survived.
const EnvDurable = "BATON_TEST_POSTGRES_DURABLE"

// startLimit bounds how long a new server may take to accept connections.
const startLimit = time.Minute

// harness is the one server of a test binary; Main makes it.
type harness struct {
	mu      sync.Mutex
	started bool
	url     string // admin URL of the server, database "postgres"
	err     error  // why there is none
	skip    bool   // err means no Postgres here, not a failure
	proc    *exec.Cmd
	exited  chan error // the server's Wait, once it ran
	dir     string
	dbs     int
}

// The harness of this test binary, set by Main before any test runs and
// read by NewDatabase; nil when Main was not called.
var current *harness

// Main runs the package's tests (call it from TestMain) and stops the
// server they started, if any, before the binary exits.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with more to do after the tests: it returns
// their exit code instead of exiting.
func Run(m *testing.M) int {
	h := &harness{}
	current = h
	code := m.Run()
	if err := h.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// NewDatabase creates an empty database for t, dropped when t ends, and
// returns its postgres:// URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	h := current
	if h == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from the package's TestMain")
	}
	admin, err := h.server()
	if err != nil {
		if h.skip && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	h.mu.Lock()
	h.dbs++
	name := fmt.Sprintf("baton_test_%d_%d", os.Getpid(), h.dbs)
	h.mu.Unlock()
	ctx := context.Background()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := adminExec(context.Background(), admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// server is the admin URL of the server, starting it on first use.
func (h *harness) server() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return h.url, h.err
	}
	h.started = true
	if u := os.Getenv(EnvURL); u != "" {
		h.url = u
		return h.url, nil
	}
	bin, err := findBin()
	if err != nil {
		h.err, h.skip = err, true
		return "", err
	}
	h.url, h.err = h.start(bin)
	return h.url, h.err
}

// findBin is the directory holding initdb and postgres.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	// The newest version first: "9" sorts after "15" as text.
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	for _, p := range found {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("no Postgres server found (initdb and postgres on PATH or in /usr/lib/postgresql/*/bin): " +
		"install Debian's postgresql package, or set " + EnvURL + " to a postgres:// URL where tests may create databases")
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// start makes a new cluster in a temporary directory and runs its server.
func (h *harness) start(bin string) (string, error) {
	// Not t.TempDir: its parents are private to this user, and the server
	// may run as another.
	dir, err := os.MkdirTemp("", "baton-pgtest-")
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	h.dir = dir
	cred, err := runAs(dir)
	if err != nil {
		return "", err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "baton", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// Another process may take the free port before the server binds
	// it: then the server exits, and another port is tried.
	for attempt := 1; ; attempt++ {
		admin, taken, err := h.launch(bin, dir, data, cred)
		if !taken || attempt == 3 {
			return admin, err
		}
	}
}

// launch runs the server of the cluster in data on a free port; taken
// says it exited because another process held the port.
func (h *harness) launch(bin, dir, data string, cred *syscall.Credential) (admin string, taken bool, err error) {
	port, err := freePort()
	if err != nil {
		return "", false, fmt.Errorf("pgtest: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return "", false, fmt.Errorf("pgtest: %w", err)
	}
	defer logFile.Close()
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir, "-c", "max_connections=200"}
	if os.Getenv(EnvDurable) != "1" {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	srv := exec.Command(filepath.Join(bin, "postgres"), args...)
	srv.Dir = dir
	srv.Stdout, srv.Stderr = logFile, logFile
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return "", false, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	admin = fmt.Sprintf("postgres://baton@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(startLimit)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		if err = ours(admin, data); err == nil {
			// Wait is taken by the goroutine above; stop reads its answer.
			h.proc, h.exited = srv, exited
			return admin, false, nil
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logFile.Name())
			return "", strings.Contains(string(log), "already in use"),
				fmt.Errorf("pgtest: postgres exited (%v) before accepting connections:\n%s", werr, log)
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			_ = srv.Process.Kill()
			<-exited
			return "", false, fmt.Errorf("pgtest: postgres did not accept connections within %v: %v", startLimit, err)
		}
	}
}

// ours checks that the server answering at admin is the one of data, not
// another that holds the port.
func ours(admin, data string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return err
	}
	if dir != data {
		return fmt.Errorf("another server (of %s) answers on its port", dir)
	}
	return nil
}

// runAs is who the server runs as: this user, or when that is root
// (which Postgres refuses) the postgres system user, else nobody; dir is
// handed to them.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and no postgres or nobody user to run the server as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// stop shuts the server down (fast: open sessions are ended) and removes
// its directory.
func (h *harness) stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	if h.proc != nil {
		_ = h.proc.Process.Signal(syscall.SIGINT)
		select {
		case <-h.exited:
		case <-time.After(startLimit):
			_ = h.proc.Process.Kill()
			<-h.exited
			errs = append(errs, errors.New("postgres did not stop when asked; killed"))
		}
		h.proc = nil
	}
	if h.dir != "" && !strings.Contains(h.dir, "..") {
		if err := os.RemoveAll(h.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

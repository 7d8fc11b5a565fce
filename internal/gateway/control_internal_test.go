package gateway

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testutil"
)

// The control socket is 0600 from the moment it listens: while it is
// bound but not yet in place, nothing answers at its path, and what is
// there afterwards is 0600.
func TestControlSocketPrivateBeforeListening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.sock")
	var sawTmp bool
	ln, err := listenPrivate(path, func(tmp string) {
		sawTmp = true
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("the socket is at %s while it listens, before it is private", path)
		}
		fi, err := os.Stat(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("listening socket mode %v, want 0600", fi.Mode().Perm())
		}
		di, err := os.Stat(filepath.Dir(tmp))
		if err != nil || di.Mode().Perm() != 0o700 {
			t.Errorf("the directory it listens in: %v %v, want 0700", di.Mode(), err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !sawTmp {
		t.Fatal("never told where it listened")
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket at %s: %v %v", path, fi, err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial the socket in place: %v", err)
	}
	c.Close()
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".s*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func controlGateway(t *testing.T, cfg Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.sock")
	cfg.Socket = path
	c := &controlServer{worker: &handoffWorker{}, idle: cfg.ControlIdle, conns: cfg.ControlConns, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stop, err := c.serve(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return path
}

// A connection that stops sending requests is closed after the idle time.
func TestControlClosesIdleConnections(t *testing.T) {
	path := controlGateway(t, Config{ControlIdle: 200 * time.Millisecond})
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One request on a kept-alive connection, then silence.
	if _, err := io.WriteString(c, "POST /v1/kick HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("kick: %v %v", resp, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(testutil.Patience))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection was not closed: %v", err)
	}
}

// Past the bound of open connections, a new one is told why and closed;
// once one closes, a new one is served.
func TestControlBoundsConnections(t *testing.T) {
	path := controlGateway(t, Config{ControlConns: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer c.Close()
	}
	// The server takes connections in order: make sure both hold a slot.
	for _, c := range held {
		if _, err := io.WriteString(c, "POST /v1/kick HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("kick: %v %v", resp, err)
		}
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(testutil.Patience))
	b, _ := io.ReadAll(c)
	if !strings.Contains(string(b), "503") || !strings.Contains(string(b), "too many open control connections") {
		t.Fatalf("third connection got %q", b)
	}
	held[0].Close()
	testutil.Eventually(t, testutil.Patience, func() bool {
		c, err := net.Dial("unix", path)
		if err != nil {
			return false
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST /v1/kick HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && resp.StatusCode == http.StatusNoContent
	}, "a freed slot to serve a new connection")
}

package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// helperDurable is the child of TestAcknowledgedIsOnDisk: it stores one
// inbound message, then says "ACK" on standard output, as an adapter
// acknowledges to its service.
func helperDurable(dir string) int {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	os.Stdout.WriteString("OPEN\n")
	if _, _, err := st.AddInbound(ctx, store.Inbound{Platform: "telegram", PlatformMsgID: "1", AddressKey: "telegram:dm:42", SenderID: "42", Text: "hello"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stdout.WriteString("ACK\n")
	return 0
}

// What baton acknowledges to a service must survive a power cut, not
// only a crash of baton: between the commit's write to the log and the
// acknowledgement, the log is synced to disk. Watched with strace in a
// child process.
func TestAcknowledgedIsOnDisk(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no strace: .ci/run should have installed it (apt-get install strace)")
		}
		t.Skip("no strace installed (apt-get install strace); this test watches the store's system calls with it")
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=write,pwrite64,fsync,fdatasync", "-o", trace,
		os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BATON_STORE_HELPER=durable", "DB_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if (strings.Contains(string(out), "ptrace") || strings.Contains(string(out), "Operation not permitted")) && os.Getenv("CI") == "" {
			t.Skipf("strace cannot trace here (a container without ptrace?): %s", out)
		}
		t.Fatalf("child: %v\n%s", err, out)
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opened, logWritten, synced, acked := false, false, 0, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, `"OPEN\n"`):
			opened = true
		case !opened:
		case strings.Contains(line, `"ACK\n"`):
			acked = true
		case acked:
		case strings.Contains(line, "pwrite64(") && strings.Contains(line, "state.db-wal>"):
			logWritten, synced = true, 0
		case (strings.Contains(line, "fsync(") || strings.Contains(line, "fdatasync(")) && strings.Contains(line, "state.db-wal>"):
			synced++
		}
	}
	if !opened || !acked || !logWritten {
		t.Fatalf("the trace lacks the store's work (open %v, log written %v, ack %v)", opened, logWritten, acked)
	}
	if synced == 0 {
		t.Error("the inbound message was acknowledged before its log write was synced to disk: a power cut could lose it")
	}
}

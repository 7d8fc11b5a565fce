package device

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.mau.fi/whatsmeow/proto/waAdv"
	_ "modernc.org/sqlite"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// The device lives in baton's own database, beside baton's tables, and
// the two write to the one file at once without locking each other out.
func TestDeviceLivesInBatonsStore(t *testing.T) {
	ctx := testutil.Context(t, 0)
	path := filepath.Join(t.TempDir(), "state.db")
	if _, err := OpenDevice(ctx, path, nil); err == nil {
		t.Fatal("a device opened without baton's store")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("opening the device created %s: %v", path, err)
	}

	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, store.Session{OwnerID: u.ID, Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}

	dev, err := OpenDevice(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dev.Linked() {
		t.Fatal("a new device is linked")
	}
	id := ownPN
	dev.store.ID = &id
	dev.store.Account = &waAdv.ADVSignedDeviceIdentity{Details: []byte{1}, AccountSignature: make([]byte, 64), AccountSignatureKey: make([]byte, 32), DeviceSignature: make([]byte, 64)} // as pairing leaves it
	if err := dev.store.Save(ctx); err != nil {
		t.Fatal(err)
	}

	// whatsmeow writes keys while baton appends messages.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 50 {
			if err := dev.store.Identities.PutIdentity(ctx, fmt.Sprintf("4915550%03d:0", i), [32]byte{byte(i)}); err != nil {
				errs <- fmt.Errorf("device write %d: %w", i, err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 50 {
			if _, err := st.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: fmt.Sprint("message ", i)}); err != nil {
				errs <- fmt.Errorf("baton write %d: %w", i, err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}

	msgs, err := st.Transcript(ctx, sess.ID)
	if err != nil || len(msgs) != 50 {
		t.Fatalf("baton's transcript beside the device: %d messages, %v", len(msgs), err)
	}
	dev, err = OpenDevice(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !dev.Linked() || dev.JID() != phone.String() {
		t.Fatalf("reopened device: linked %v as %q", dev.Linked(), dev.JID())
	}
	dev.Close()

	// One file holds both: baton's tables and whatsmeow's.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type='table' AND (name LIKE 'whatsmeow_%' OR name IN ('schema_migrations','messages')) ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	got := strings.Join(tables, " ")
	for _, want := range []string{"messages", "schema_migrations", "whatsmeow_device", "whatsmeow_identity_keys", "whatsmeow_version"} {
		if !strings.Contains(got, want) {
			t.Errorf("tables %q lack %s", got, want)
		}
	}

	jid, err := Unlink(ctx, path, nil)
	if err != nil || jid != phone.String() {
		t.Fatalf("unlink: %q, %v", jid, err)
	}
	if jid, err := Unlink(ctx, path, nil); err != nil || jid != "" {
		t.Fatalf("unlink again: %q, %v", jid, err)
	}
	dev, err = OpenDevice(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if dev.Linked() {
		t.Error("the device is still linked after unlink")
	}
	if msgs, err := st.Transcript(ctx, sess.ID); err != nil || len(msgs) != 50 {
		t.Errorf("unlink touched baton's transcript: %d messages, %v", len(msgs), err)
	}
}

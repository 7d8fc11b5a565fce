package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

// A delivery stored before deliveries had kinds reads as an answer after
// the migration, and a kind with its data survives closing and reopening
// the store.
func TestDeliveryKindSurvivesMigrationAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, exec := atVersion(t, path, 14)
	exec(`INSERT INTO deliveries (key, address_key, text, created_at) VALUES ('in:1:part:0', 'web:dm:main', 'an old answer', 1)`)
	db.Close()

	s, err := Open(t.Context(), path, WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.DeliveryByKey(t.Context(), "in:1:part:0")
	if err != nil || old.Kind != "" || old.Text != "an old answer" || old.Data.Tool != "" {
		t.Fatalf("old delivery after the migration: %+v, %v", old, err)
	}
	q := store.Delivery{Key: "approval:s:c:1:part:0", AddressKey: "web:dm:main", Text: "May I?", Kind: store.DeliveryApproval,
		Data: store.DeliveryData{Tool: "shell", Subject: "ls\n```", Choices: []string{"approve", "deny"}}}
	if _, err := s.EnqueueDeliveries(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(t.Context(), path, WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.PendingDeliveries(t.Context(), "web:dm:main", 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("pending after reopening: %+v, %v", got, err)
	}
	if d := got[1]; d.Kind != store.DeliveryApproval || d.Data.Tool != "shell" || d.Data.Subject != "ls\n```" || len(d.Data.Choices) != 2 {
		t.Fatalf("question after reopening: %+v", d)
	}
}

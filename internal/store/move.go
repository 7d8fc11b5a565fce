package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"time"
)

// Moving a store to another (baton migrate) is a Dumper's rows handed to
// an Importer as they are: ids, sequence numbers and times kept, so that
// everything naming a row (a binding, a note's handoff, a delivery's
// key, a person's memory of a session id) still names it. A Counter on
// each side, and TranscriptSum over what each side's Messages.History
// reads back, tell whether the copy is whole.

// Dumper is the optional part of a store that reads out every row it
// holds, for another store to import.
type Dumper interface {
	// Dump hands every row to load, in batches, as of one moment, in an
	// order where a row comes after the rows it names: users,
	// identities, sessions (in the order they were made), files,
	// messages (with their attachments), bindings, handoffs, notes,
	// pairings, home channels, platform states, inbound events (with
	// their parking) and deliveries. An error from load stops it.
	Dump(ctx context.Context, load func(Batch) error) error
}

// Importer is the optional part of a store that takes in another's rows.
type Importer interface {
	// Import runs dump, which calls load with each batch in turn, and
	// keeps every row as it was in one transaction: all of them or, on
	// any error, none. The store must hold nothing yet (ErrNotEmpty).
	Import(ctx context.Context, dump func(load func(Batch) error) error) error
}

// Counter is the optional part of a store that counts what it holds, by
// the kinds CountKinds lists.
type Counter interface {
	Count(ctx context.Context) (map[string]int64, error)
}

// ErrNotEmpty is Import's answer for a store that already holds rows.
var ErrNotEmpty = &wrapped{msg: "the store already holds conversations", kind: ErrConflict}

// CountKinds are what a Counter counts, in the order people read them.
var CountKinds = []string{
	"users", "identities", "sessions", "messages", "superseded messages", "attachments",
	"bindings", "handoffs", "notes", "pairings", "home channels", "platform states",
	"inbound events", "parked events", "deliveries", "files", "file bytes",
}

// Batch is a part of a store's rows; Import stores its fields in the
// order they are declared.
type Batch struct {
	Users      []User
	Identities []Identity
	Sessions   []SessionRow
	Files      []FileRow
	Messages   []Message // with ID, Seq, Superseded and their Attachments' IDs
	Bindings   []Binding
	Handoffs   []Handoff
	Notes      []Note
	Pairings   []Pairing
	Homes      []HomeChannel
	States     []PlatformStateRow
	Inbound    []InboundRow
	Deliveries []Delivery
}

// SessionRow is a session with what Session leaves out.
type SessionRow struct {
	Session
	Draft   string
	NextSeq int64 // the seq the session's next message takes
}

// FileRow is the bytes kept under one SHA-256.
type FileRow struct {
	SHA256 string
	Data   []byte
	PutAt  time.Time // when they were last put
}

// HomeChannel is one platform's home (Homes).
type HomeChannel struct {
	Platform   string
	AddressKey string
	UpdatedAt  time.Time
}

// PlatformStateRow is one value of a platform's memory (PlatformStates).
type PlatformStateRow struct {
	Platform  string
	Key       string
	Value     string
	UpdatedAt time.Time
}

// InboundRow is an inbound event with its parking, if parked.
type InboundRow struct {
	Inbound
	Parked *Parking
}

// Parking is where a parked event waits (Inbox.ParkInbound).
type Parking struct {
	SessionID  string
	AddressKey string
	ParkedAt   time.Time
}

// TranscriptSum is a SHA-256 over msgs (a session's History) as stored:
// every field of every message and of its attachments, in order, each
// written with its length, so any difference in any byte changes it.
func TranscriptSum(msgs []Message) [32]byte {
	h := sha256.New()
	for _, m := range msgs {
		sumInts(h, m.ID, m.Seq, m.CreatedAt.UnixMicro(), boolInt(m.Superseded), boolInt(m.ToolCalls != nil))
		sumStrings(h, m.SessionID, string(m.Role), string(m.Kind), m.Content, string(m.ToolCalls), m.ToolCallID,
			m.ToolName, m.Platform, m.PlatformMsgID)
		sumInts(h, int64(len(m.Attachments)))
		for _, a := range m.Attachments {
			sumInts(h, a.ID, a.MessageID, int64(a.Ordinal), a.Size, int64(a.Width), int64(a.Height), int64(a.Duration), boolInt(a.Voice))
			sumStrings(h, a.Name, a.MediaType, a.SHA256, a.Transcript)
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func sumInts(h hash.Hash, ns ...int64) {
	var b [8]byte
	for _, n := range ns {
		binary.BigEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
}

func sumStrings(h hash.Hash, ss ...string) {
	for _, s := range ss {
		sumInts(h, int64(len(s)))
		h.Write([]byte(s))
	}
}

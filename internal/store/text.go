package store

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// What every store keeps, and refuses, the same way (storetest's Honest
// group holds each store to it):
//
// Words a person or a model wrote are kept byte for byte, whatever the
// bytes: a message's content and tool calls (the JSON as given, keys in
// their order, spaces and all; never re-encoded), a draft, an inbound
// event's and a delivery's text, a delivery's and a handoff's error, a
// note's body, an attachment's transcript and a platform state's value. NUL bytes and
// invalid UTF-8 included, where a Postgres text column would refuse
// them: a store keeps such columns as bytes.
//
// Names are text: ids, keys, address keys, platforms, models, kinds,
// display names and file names must be valid UTF-8 without NUL. A store
// refuses any other with an error wrapping ErrInvalid (CheckNames), and
// stores nothing of that call. A message's names and tool calls hold no
// 0x1e or 0x1f either (Message.Check). A lookup, list or change by a name
// that is not text finds nothing: ErrNotFound, an empty list, or no
// change, as for any name nothing was stored under.
//
// Times are kept to the microsecond (Postgres's precision): a store
// returns what it stored truncated to the microsecond, in what the write
// returns and in every later read.
//
// Lists are ordered by what the store assigns, never by a clock alone:
// rows with one timestamp keep the order they were stored in (sessions
// most recently active first, ties newest created first; transcripts by
// Seq; queues by ID).

// CheckNames refuses, with ErrInvalid, a name that is not valid UTF-8 or
// holds a NUL byte; names alternate a description and the value.
func CheckNames(what ...string) error {
	for i := 0; i+1 < len(what); i += 2 {
		v := what[i+1]
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%s %q is not text (invalid UTF-8 or a NUL byte): %w", what[i], v, ErrInvalid)
		}
	}
	return nil
}

// Micro is t as a store keeps it: truncated to the microsecond, without
// a monotonic clock reading.
func Micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Microsecond)
}

// Check refuses a message whose names are not text (CheckNames), or
// whose role, kind, tool call id, tool, platform, platform message id or
// tool calls hold the control characters 0x1e or 0x1f: a store may keep
// messages in packs separated by them (the SQLite store does), and JSON
// never holds them raw.
func (m Message) Check() error {
	names := []string{"role", string(m.Role), "kind", string(m.Kind), "tool call id", m.ToolCallID, "tool", m.ToolName,
		"platform", m.Platform, "platform message id", m.PlatformMsgID}
	if err := CheckNames(names...); err != nil {
		return err
	}
	for i := 0; i < len(names); i += 2 {
		if strings.ContainsAny(names[i+1], packSeparators) {
			return fmt.Errorf("%s %q holds a control character (0x1e or 0x1f): %w", names[i], names[i+1], ErrInvalid)
		}
	}
	if strings.ContainsAny(string(m.ToolCalls), packSeparators) {
		return fmt.Errorf("tool calls hold a raw control character (0x1e or 0x1f): %w", ErrInvalid)
	}
	return checkAttachments(m.Attachments)
}

// packSeparators are the control characters no message name holds.
const packSeparators = "\x1e\x1f"

// Check refuses an identity whose names are not text (CheckNames).
func (id Identity) Check() error {
	return CheckNames("platform", id.Platform, "platform user id", id.PlatformUserID, "user", id.UserID,
		"display name", id.DisplayName)
}

// Check refuses an inbound event whose names are not text (CheckNames).
func (in Inbound) Check() error {
	if err := CheckNames("platform", in.Platform, "platform message id", in.PlatformMsgID,
		"address key", in.AddressKey, "sender id", in.SenderID, "sender", in.Sender, "claimer", in.ClaimedBy); err != nil {
		return err
	}
	return checkAttachments(in.Attachments)
}

// Check refuses a delivery whose names are not text (CheckNames).
func (d Delivery) Check() error {
	if err := CheckNames("key", d.Key, "address key", d.AddressKey, "platform message id", d.PlatformMsgID,
		"kind", string(d.Kind), "claimer", d.ClaimedBy); err != nil {
		return err
	}
	return checkAttachments(d.Attachments)
}

func checkAttachments(as []Attachment) error {
	for _, a := range as {
		if err := CheckNames("file name", a.Name, "media type", a.MediaType, "sha256", a.SHA256); err != nil {
			return err
		}
	}
	return nil
}

package platform

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"
)

// Spec is how a chat service plugs into baton: one per platform package,
// listed once in internal/platform/all. The daemon, the gateway and the
// configuration know platforms only through it.
type Spec struct {
	// Name is the platform name in addresses and config ("telegram").
	Name string
	// Display is the name people read ("Telegram").
	Display string
	// Trusted platforms prove the owner by their own access control (the
	// web chat's token): every sender there is the owner.
	Trusted bool
	// Personal platforms run on the owner's own account (a linked Signal
	// device, the owner's Apple ID): what others send there is the
	// owner's private conversation, never baton's, so the gateway neither
	// answers it nor offers pairing.
	Personal bool
	// Shared platforms may be read by every gateway sharing one store at
	// once (each web chat serves its own pages; Slack spreads Socket Mode
	// envelopes, and the store drops a repeat). The others allow one
	// reader per bot account (a Telegram token's getUpdates, a Discord
	// gateway session, a linked device): one gateway leads each.
	Shared bool
	// DefaultHome is the address key handoffs land at when no home is
	// configured or set with /sethome; "" if there is none.
	DefaultHome string
	// CheckAddress refuses an address the service cannot have (a Matrix
	// room id without its server), saying what one looks like; nil
	// accepts any. Addresses a person writes (gateway.homes) are read
	// with it, so ids that hold ':' need no escaping there.
	CheckAddress func(Address) error
	// HomeForm is an example of a home written in config.yaml
	// ("matrix:group:!roomid:example.org"), shown when one is refused.
	HomeForm string
	// Open builds the adapter from its config section and environment. It
	// returns ErrNotConfigured when nothing asks for the platform (no
	// token), an error saying what to fix when the section is wrong.
	Open func(ctx context.Context, s Setup) (Adapter, error)
	// Subcommands are the platform's own setup commands, run as `baton
	// <name> <subcommand>` (linking a device); none for most platforms.
	Subcommands []Subcommand
}

// Subcommand is a setup command a platform offers on baton's command line.
type Subcommand struct {
	// Name is the subcommand ("link"); Short and Long its help.
	Name, Short, Long string
	// Run does it, talking to the person through env.
	Run func(ctx context.Context, env SubcommandEnv) error
}

// SubcommandEnv is what a platform's setup command gets.
type SubcommandEnv struct {
	// Home is BATON_HOME.
	Home string
	// StoreFile is the SQLite file of baton's configured store, opened
	// and migrated before the command runs.
	StoreFile string
	// Out is the terminal.
	Out io.Writer
	// Log takes warnings worth showing.
	Log *slog.Logger
}

// ErrNotConfigured is returned by Spec.Open for a platform nothing enables.
var ErrNotConfigured = errors.New("not configured")

// Setup is what Spec.Open gets.
type Setup struct {
	// Decode reads the platform's section of config.yaml (the top-level
	// key named after it) into v, refusing unknown fields; with no section
	// it leaves v as it is.
	Decode func(v any) error
	// Present reports whether config.yaml has a section for the platform.
	Present bool
	// Env reads an environment variable (tokens may come from there).
	Env func(string) string
	// Home is BATON_HOME, for files an adapter keeps (the web token).
	Home string
	// StoreFile is the SQLite file of baton's configured store, for a
	// library that keeps tables of its own in baton's database (the
	// WhatsApp device); "" where there is none.
	StoreFile string
	// Log is the gateway's logger.
	Log *slog.Logger
	// Transcripts lets an adapter that shows history (the web page) read
	// conversations; nil where none is offered.
	Transcripts Transcripts
	// Memory is the platform's own key/value memory in baton's store (a
	// sync token); nil where none is offered.
	Memory Memory
	// MaxFile is the largest file, in bytes, baton keeps (config
	// files.max_bytes); 0: the store's default. An adapter that takes
	// files itself (the web page's upload) bounds them so.
	MaxFile int64
	// Owners are the platform user ids configured as the owner's
	// (gateway.owners), for adapters that act on them before any message
	// (accepting an invitation).
	Owners []string
}

// Memory is what a platform keeps in baton's store across restarts: a
// few small values it cannot ask its service for, under keys of its own.
type Memory interface {
	// Get is the value stored under key; "" when none was set.
	Get(ctx context.Context, key string) (string, error)
	// Set stores value under key; an empty value clears it.
	Set(ctx context.Context, key, value string) error
}

// Transcripts is what a platform may read of the store: its own
// conversations and their transcripts as people see them.
type Transcripts interface {
	// Conversations lists the owner's conversations on platform, most
	// recent first.
	Conversations(ctx context.Context, platform string) ([]Conversation, error)
	// View is the transcript of the session bound to key, as lines to
	// show; none yet is empty.
	View(ctx context.Context, key string) ([]Line, error)
}

// Conversation is one conversation a platform lists (the web page's side
// bar).
type Conversation struct {
	Key     string    `json:"key"`
	Title   string    `json:"title"`
	Updated time.Time `json:"updated"`
}

// Line is one transcript entry as a person sees it.
type Line struct {
	Role string    `json:"role"` // user, assistant, tool, note
	Text string    `json:"text"`
	Tool string    `json:"tool,omitempty"` // tool calls and results: the tool's name
	Time time.Time `json:"time"`
	// Tool lines only, for places that show a call and its result
	// together: Call is "call" or "result", Detail the call's arguments
	// or the result's output as they are, CallID pairs the two.
	Call   string `json:"call,omitempty"`
	Detail string `json:"detail,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// A person's lines: ID is the platform's id of the message (a page
	// knows its own messages by it); Kept marks one said here while the
	// session was held elsewhere, kept until /continue brings it here.
	ID   string `json:"id,omitempty"`
	Kept bool   `json:"kept,omitempty"`
	// Files are the files the message carries (a person's photo, a file
	// a tool sent), read with FileOpener.
	Files []LineFile `json:"files,omitempty"`
}

// LineFile is a file a transcript line carries: Ref names it to
// FileOpener.OpenFile (a content hash); the media type is the one sniffed
// from the bytes.
type LineFile struct {
	Ref       string `json:"ref"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
}

// FileOpener is the optional part of Transcripts that reads the files of
// a conversation's lines.
type FileOpener interface {
	// OpenFile is the file ref of the transcript of the conversation at
	// key (a ref of another conversation is not found there); its Open
	// reads the bytes.
	OpenFile(ctx context.Context, key, ref string) (File, error)
}

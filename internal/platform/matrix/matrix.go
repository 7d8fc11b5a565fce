// Package matrix connects baton to Matrix through the client-server API:
// a bot account logged in with an access token, long-polling /sync, with
// replies as formatted messages (org.matrix.custom.html), threads
// (m.thread) as handoff destinations, typing notifications and edits
// (m.replace). Encrypted rooms are not supported.
//
// Addresses: a room is platform.Group with Chat = the room id; a message
// in a thread is platform.Thread with Chat = the room id and Thread = the
// thread's root event id. NewThread posts a root event in the home room
// and returns exactly the address a person's reply in that thread (from
// Element or any client that sets an m.thread relation) will carry.
//
// Files: m.image, m.file, m.audio and m.video messages arrive as
// attachments read through the homeserver's authenticated media (an
// mxc:// URI only); SendFile uploads a file and posts it as m.image or
// m.file. The limit either way is the homeserver's m.upload.size.
//
// The sync token is kept in baton's store (platform.Memory) and moved on
// only after every message of a sync batch was stored, so a restart
// neither replays nor loses a message.
package matrix

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/baton-agent/baton/internal/platform"
)

// Name is the platform name in addresses and config.
const Name = "matrix"

// MaxMessageLen is the longest reply, in bytes of markdown, sent as one
// event. Matrix refuses events over 65,536 bytes, and an event carries the
// text twice (plain and HTML) plus its envelope; Send still checks the
// encoded size and degrades to plain text or splits further if needed.
const MaxMessageLen = 16000

// maxContentBytes bounds an event's encoded content, leaving room under
// Matrix's 65,536-byte event limit for the envelope the server adds
// (signatures, hashes, auth events).
const maxContentBytes = 60000

// Environment variables Spec reads when config.yaml does not say.
const (
	EnvHomeserver = "MATRIX_HOMESERVER"
	EnvUserID     = "MATRIX_USER_ID"
	EnvToken      = "MATRIX_ACCESS_TOKEN"
)

// Config configures the adapter. HomeserverURL and AccessToken are
// required.
type Config struct {
	// HomeserverURL is the client-server API's base URL
	// ("https://matrix.example.org").
	HomeserverURL string
	// UserID is the bot's Matrix id (@baton:example.org). Optional: the
	// homeserver says whose the token is; when set, a token of another
	// account is refused.
	UserID string
	// AccessToken is the bot account's access token. It is a secret: it
	// is never logged, and String and LogValue hide it.
	AccessToken string
	// Owners are the Matrix ids whose invitations the bot accepts; others
	// are declined.
	Owners []string
	// Memory keeps the sync token across restarts; nil keeps it for the
	// life of the adapter only (a new adapter starts from now).
	Memory platform.Memory
	// SyncTimeout is how long one /sync long poll waits for news;
	// default 30s.
	SyncTimeout time.Duration
	// RequestTimeout bounds one API call other than /sync; default 30s.
	RequestTimeout time.Duration
	// TimelineLimit is how many events of a room one sync returns before
	// the rest is fetched page by page; default 50.
	TimelineLimit int
	// HTTPClient makes the requests; default a client without a global
	// timeout (each request gets its own deadline).
	HTTPClient *http.Client
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
}

// String describes c without its token.
func (c Config) String() string {
	return fmt.Sprintf("matrix.Config{HomeserverURL: %q, UserID: %q, AccessToken: %s}", c.HomeserverURL, c.UserID, platform.Redacted(c.AccessToken))
}

// LogValue keeps the token out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("homeserver", c.HomeserverURL), slog.String("user_id", c.UserID),
		slog.String("access_token", platform.Redacted(c.AccessToken)))
}

// Adapter is the Matrix platform adapter. It implements platform.Adapter,
// Threader, Typer, Editor, EditPacer, Limiter, Prober, DownloadLimiter
// and FileSender.
type Adapter struct {
	cfg    Config
	cli    *mautrix.Client
	log    *slog.Logger
	owners map[id.UserID]bool

	mu      sync.Mutex
	me      id.UserID             // the bot, as whoami said
	since   string                // the sync token reached: events before it are stored
	latest  map[string]id.EventID // thread address key → its newest event, for the reply fallback
	order   []string              // keys of latest, oldest first, to bound it
	refused platform.Refusals     // optional methods already logged as refused
	warned  map[id.RoomID]bool    // encrypted rooms already logged
	// uploadSize is the homeserver's m.upload.size, 0 until known.
	uploadSize int64
	// newestSeen is, per room, the newest event handed over (also in
	// Memory), where a backfill stops.
	newestSeen map[id.RoomID]string
}

var (
	_ platform.Adapter   = (*Adapter)(nil)
	_ platform.Threader  = (*Adapter)(nil)
	_ platform.Typer     = (*Adapter)(nil)
	_ platform.Editor    = (*Adapter)(nil)
	_ platform.EditPacer = (*Adapter)(nil)
	_ platform.Limiter   = (*Adapter)(nil)
	_ platform.Prober    = (*Adapter)(nil)
)

// latestLimit bounds the threads whose newest event is remembered.
const latestLimit = 1024

// New makes an adapter; it does not contact the homeserver (Run does).
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.AccessToken) == "" {
		return nil, errors.New("matrix: no access token (set it in the config or " + EnvToken + ")")
	}
	u, err := url.Parse(strings.TrimSpace(cfg.HomeserverURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("matrix: homeserver URL %q: want http(s)://host", cfg.HomeserverURL)
	}
	if cfg.UserID != "" {
		if _, _, err := id.UserID(cfg.UserID).Parse(); err != nil {
			return nil, fmt.Errorf("matrix: user id %q: want @name:server", cfg.UserID)
		}
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 30 * time.Second
	}
	cfg.RequestTimeout = platform.RequestTimeout(cfg.RequestTimeout)
	if cfg.TimelineLimit <= 0 {
		cfg.TimelineLimit = 50
	}
	cli, err := mautrix.NewClient(u.String(), id.UserID(cfg.UserID), cfg.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	cli.Client = platform.NewHTTPClient()
	if cfg.HTTPClient != nil {
		cli.Client = cfg.HTTPClient
	}
	cli.DefaultHTTPRetries = 0 // the gateway owns retries
	cli.UserAgent = "baton"
	log := platform.Logger(cfg.Logger, Name)
	owners := map[id.UserID]bool{}
	for _, o := range cfg.Owners {
		if o = strings.TrimSpace(o); o != "" {
			owners[id.UserID(o)] = true
		}
	}
	return &Adapter{cfg: cfg, cli: cli, log: log, owners: owners,
		latest: map[string]id.EventID{}, newestSeen: map[id.RoomID]string{}, warned: map[id.RoomID]bool{}}, nil
}

// Name is "matrix".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 16000 bytes.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts bytes, as Matrix's event size limit does.
func (a *Adapter) MessageLen(s string) int { return len(s) }

// EditEvery paces streamed edits of one message. Homeservers rate-limit
// sending per user (Synapse's default allows a burst of 10, then one event
// every 5 s); edits every 2 s keep a streamed reply within a burst.
func (a *Adapter) EditEvery() time.Duration { return 2 * time.Second }

// UserID is the bot's Matrix id once Run has asked the homeserver.
func (a *Adapter) UserID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return string(a.me)
}

// remember notes ev as the newest event of the thread at key.
func (a *Adapter) remember(key string, ev id.EventID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.latest[key]; !ok {
		a.order = append(a.order, key)
		if len(a.order) > latestLimit {
			delete(a.latest, a.order[0])
			a.order = a.order[1:]
		}
	}
	a.latest[key] = ev
}

func (a *Adapter) newest(key string) id.EventID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.latest[key]
}

// Package discord connects baton to Discord as a bot: the gateway
// websocket for messages (with the Message Content intent), REST for
// replies, typing, edits and the threads handoffs open. Attachments are
// read from Discord's CDN; files go out as multipart messages (files.go).
//
// Addresses: a direct message is platform.DM with Chat = the DM channel id;
// a guild text channel is platform.Group with Chat = the channel id; a
// message in a thread is platform.Thread with Chat = the thread's parent
// channel and Thread = the thread's channel id. NewThread returns exactly
// that address for the thread it opens, so the binding a handoff makes
// matches the person's later messages there.
//
// The gateway connection is driven here, on disgo's wire types, rather
// than by disgo's gateway client: that client waits a second before every
// connection, retries failed connections forever by itself, and resumes
// from the last event it read rather than the last one baton stored. Here
// a dropped connection ends Run (the gateway's supervisor restarts it),
// and the next Run resumes the session from the last event handed over and
// stored, so Discord replays what was not stored and nothing else.
package discord

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"

	"github.com/baton-agent/baton/internal/platform"
)

// Name is the platform name in addresses and config.
const Name = "discord"

// MaxMessageLen is Discord's limit on a message's content. It is counted
// here in UTF-16 code units, as Discord's own clients count it: never more
// than the characters Discord's API counts, so a part never comes back
// refused as too long.
const MaxMessageLen = 2000

// maxThreadName is Discord's limit on a channel (thread) name.
const maxThreadName = 100

// maxNonce is the longest string nonce a message may carry.
const maxNonce = 25

// EnvToken is the environment variable the bot token is read from when
// config.yaml has none.
const EnvToken = "DISCORD_BOT_TOKEN"

// DefaultAPIURL is Discord's REST API, version 10.
const DefaultAPIURL = "https://discord.com/api/v10"

// Intents baton asks for: messages in guilds and DMs, and their content
// (a privileged intent: it must be switched on for the bot in the
// developer portal, or Discord closes the connection with 4014).
const Intents = gateway.IntentGuilds | gateway.IntentGuildMessages | gateway.IntentDirectMessages | gateway.IntentMessageContent

// Config configures the adapter. Only Token is required.
type Config struct {
	// Token is the bot token from the developer portal. It is a secret:
	// never logged; String and LogValue hide it.
	Token string
	// APIURL is the REST API base, default DefaultAPIURL (tests point it
	// at a fake).
	APIURL string
	// GatewayURL is the gateway websocket; default the URL Discord gives
	// in GET /gateway/bot.
	GatewayURL string
	// HTTPClient makes REST requests; default a client without a global
	// timeout (each call has RequestTimeout).
	HTTPClient *http.Client
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds one REST call and the gateway handshake;
	// default 30s.
	RequestTimeout time.Duration
	// CDNURL is where attachments are downloaded from, default
	// DefaultCDNURL: only an attachment URL on it, under /attachments/,
	// is ever fetched (tests point it at a fake).
	CDNURL string
	// Memory keeps the gateway session to resume across restarts of baton
	// (its id, resume URL, last event handed over and the bot's id), so
	// that Discord replays what was said while baton was down; nil keeps
	// it in memory only, and a restart identifies afresh.
	Memory platform.Memory
}

// String describes c without its token.
func (c Config) String() string {
	return fmt.Sprintf("discord.Config{APIURL: %q, GatewayURL: %q, Token: %s}", c.APIURL, c.GatewayURL, platform.Redacted(c.Token))
}

// LogValue keeps the token out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("api_url", c.APIURL), slog.String("gateway_url", c.GatewayURL), slog.String("token", platform.Redacted(c.Token)))
}

// Adapter is the Discord platform adapter: platform.Adapter, Threader,
// Typer, Editor, EditPacer, Limiter, DownloadLimiter and FileSender.
type Adapter struct {
	cfg  Config
	rest rest.Client
	http *http.Client // downloads from the CDN
	cdn  *url.URL     // Config.CDNURL
	log  *slog.Logger

	mu       sync.Mutex
	botID    string              // the bot's user id, from READY
	session  resumeState         // what the next Run resumes
	loaded   bool                // session was read from Config.Memory
	channels map[string]chanInfo // channel id → what it is, learned from events and REST
	refused  platform.Refusals   // optional methods already logged as refused
	// Where people last spoke to baton (with each channel's guild), and
	// whether what they said there since must be fetched (backfill.go).
	marks      *platform.Marks[string]
	catchUpDue bool
	// Used by Run alone: messages handed over lately, so a replay after a
	// resume that overlaps is not handed over twice.
	seen *platform.Seen
}

// resumeState is a gateway session the next connection resumes; the zero
// value means identify afresh.
type resumeState struct {
	id  string // session_id from READY
	url string // resume_gateway_url from READY
	seq int    // the last event handed over and stored (or ignored)
}

// chanInfo is what baton needs to know of a channel to address it.
type chanInfo struct {
	kind   discord.ChannelType
	parent string // a thread's parent channel
	guild  string
}

var (
	_ platform.Adapter   = (*Adapter)(nil)
	_ platform.Threader  = (*Adapter)(nil)
	_ platform.Typer     = (*Adapter)(nil)
	_ platform.Editor    = (*Adapter)(nil)
	_ platform.EditPacer = (*Adapter)(nil)
	_ platform.Limiter   = (*Adapter)(nil)
	_ platform.Prober    = (*Adapter)(nil)

	_ platform.DownloadLimiter = (*Adapter)(nil)
	_ platform.FileSender      = (*Adapter)(nil)
)

// New makes an adapter; it does not contact Discord (Run does).
func New(cfg Config) (*Adapter, error) {
	cfg.Token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	if cfg.Token == "" {
		return nil, errors.New("discord: no bot token (set discord.token in config.yaml or " + EnvToken + ")")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.CDNURL == "" {
		cfg.CDNURL = DefaultCDNURL
	}
	cdn, err := url.Parse(strings.TrimRight(cfg.CDNURL, "/"))
	if err != nil || cdn.Host == "" {
		return nil, fmt.Errorf("discord: CDN URL %q is not an absolute URL", cfg.CDNURL)
	}
	cfg.RequestTimeout = platform.RequestTimeout(cfg.RequestTimeout)
	client := platform.HTTPClientOr(cfg.HTTPClient)
	log := platform.Logger(cfg.Logger, Name)
	restClient := rest.NewClient(cfg.Token,
		rest.WithURL(cfg.APIURL),
		rest.WithHTTPClient(client),
		// No waiting and no retries inside the adapter: a 429 comes back
		// as platform.RetryAfter and the gateway waits it out.
		rest.WithRateLimiter(rest.NewNoopRateLimiter()),
		rest.WithLogger(log),
	)
	return &Adapter{
		cfg:      cfg,
		rest:     restClient,
		http:     client,
		cdn:      cdn,
		log:      log,
		channels: map[string]chanInfo{},
		marks:    platform.NewMarks[string](maxMarked, newer),
		seen:     platform.NewSeen(platform.SeenLimit),
	}, nil
}

// noMentions lets a message mention nobody — every list empty, not
// absent, since Discord's default parses @everyone: a replayed transcript
// must never ping everyone, a role or a person.
func noMentions() discord.AllowedMentions {
	return discord.AllowedMentions{Parse: []discord.AllowedMentionType{}, Roles: []snowflake.ID{}, Users: []snowflake.ID{}}
}

// Name is "discord".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 2000.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts UTF-16 code units; see MaxMessageLen.
func (a *Adapter) MessageLen(s string) int { return platform.UTF16Len(s) }

// EditEvery paces streamed edits: Discord allows five edits of a channel's
// messages in five seconds before answering 429.
func (a *Adapter) EditEvery() time.Duration { return 1200 * time.Millisecond }

// BotID is the bot's user id once Run has connected.
func (a *Adapter) BotID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}

// Package telegram connects baton to Telegram through the Bot API: long
// polling for messages, HTML-formatted replies split at Telegram's limit,
// forum topics as handoff threads, typing, edits and the command menu.
//
// Addresses: a private chat is platform.DM with Chat = the chat id (and
// Thread = the topic id in a private chat with topics); a group or a
// supergroup outside topics is platform.Group; a message in a forum
// supergroup topic is platform.Thread with Chat = the chat id and Thread =
// the message_thread_id. NewThread returns exactly these addresses for the
// topics it creates, so a binding made at handoff matches the person's
// later messages there.
package telegram

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"github.com/baton-agent/baton/internal/platform"
)

// Name is the platform name in addresses and config.
const Name = "telegram"

// MaxMessageLen is Telegram's limit on a message's text, in UTF-16 code
// units of the text as displayed (after HTML entities are parsed).
const MaxMessageLen = 4096

// maxTopicName is Telegram's limit on a forum topic name.
const maxTopicName = 128

// EnvToken is the environment variable FromEnv reads the bot token from.
const EnvToken = "TELEGRAM_BOT_TOKEN"

// Config configures the adapter. Only Token is required.
type Config struct {
	// Token is the bot token from @BotFather. It is a secret: it is never
	// logged, and String and LogValue hide it.
	Token string
	// ServerURL is the Bot API server, for self-hosted servers (and
	// tests); default https://api.telegram.org.
	ServerURL string
	// PollTimeout is how long one getUpdates long poll waits for news;
	// default 50s.
	PollTimeout time.Duration
	// HTTPClient makes the requests; default a client without a global
	// timeout (each request gets its own deadline from a context).
	HTTPClient *http.Client
	// Logger receives warnings (refused optional methods, retries);
	// default slog.Default().
	Logger *slog.Logger
	// MaxAttempts bounds the tries of one API call on rate limits, server
	// errors and network errors; default 5.
	MaxAttempts int
	// RetryBase is the first backoff after a server or network error (and
	// after a Handler error), doubled on each retry up to RetryMax;
	// defaults 1s and 30s.
	RetryBase, RetryMax time.Duration
	// RequestTimeout bounds one API call other than getUpdates; default 30s.
	RequestTimeout time.Duration
}

// FromEnv returns c with Token taken from TELEGRAM_BOT_TOKEN when c has
// none: config wins over the environment.
func FromEnv(c Config) Config {
	if strings.TrimSpace(c.Token) == "" {
		c.Token = strings.TrimSpace(os.Getenv(EnvToken))
	}
	return c
}

// String describes c without its token.
func (c Config) String() string {
	return fmt.Sprintf("telegram.Config{ServerURL: %q, Token: %s}", c.ServerURL, redacted(c.Token))
}

// LogValue keeps the token out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("server_url", c.ServerURL), slog.String("token", redacted(c.Token)))
}

func redacted(tok string) string {
	if tok == "" {
		return "(none)"
	}
	return "(set)"
}

// Adapter is the Telegram platform adapter. It implements
// platform.Adapter, Threader, Typer, Editor, Limiter and Commander.
type Adapter struct {
	cfg    Config
	api    *bot.Bot
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	username string          // the bot's @username, learned from getMe
	refused  map[string]bool // optional methods already logged as refused

	ready     chan struct{} // closed once getMe has answered
	readyOnce sync.Once
}

var (
	_ platform.Adapter   = (*Adapter)(nil)
	_ platform.Threader  = (*Adapter)(nil)
	_ platform.Typer     = (*Adapter)(nil)
	_ platform.Editor    = (*Adapter)(nil)
	_ platform.Limiter   = (*Adapter)(nil)
	_ platform.Commander = (*Adapter)(nil)
	_ platform.Readier   = (*Adapter)(nil)
)

// Ready is closed once the bot has identified itself to Telegram, i.e.
// the token works.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// New makes an adapter; it does not contact Telegram (Run does).
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("telegram: no bot token (set it in the config or " + EnvToken + ")")
	}
	if cfg.ServerURL == "" {
		cfg.ServerURL = "https://api.telegram.org"
	}
	cfg.ServerURL = strings.TrimRight(cfg.ServerURL, "/")
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 50 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 30 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	a := &Adapter{cfg: cfg, client: client, log: log.With("platform", Name), refused: map[string]bool{}, ready: make(chan struct{})}
	api, err := bot.New(cfg.Token,
		bot.WithServerURL(cfg.ServerURL),
		bot.WithHTTPClient(cfg.PollTimeout, client),
		bot.WithSkipGetMe(),
		bot.WithErrorsHandler(func(err error) { a.log.Warn("telegram client", "err", err) }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	a.api = api
	return a, nil
}

// Name is "telegram".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 4096.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts UTF-16 code units, as Telegram does.
func (a *Adapter) MessageLen(s string) int { return platform.UTF16Len(s) }

// Username is the bot's @username (without "@") once Run has learned it.
func (a *Adapter) Username() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.username
}

// refusedOnce logs an optional method's refusal the first time only: a
// server without sendChatAction would otherwise log every four seconds.
func (a *Adapter) refusedOnce(method string, err error) {
	a.mu.Lock()
	first := !a.refused[method]
	a.refused[method] = true
	a.mu.Unlock()
	if first {
		a.log.Warn("telegram: optional method refused by the Bot API server; continuing without it",
			"method", method, "err", err)
	}
}

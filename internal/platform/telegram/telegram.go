// Package telegram connects baton to Telegram through the Bot API: long
// polling for messages, HTML-formatted replies split at Telegram's limit,
// forum topics as handoff threads, typing, edits and the command menu.
// Photos, documents, voice and video notes, audio and video arrive as the
// event's attachments, read through getFile when the event is stored.
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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// Logger receives warnings (refused optional methods);
	// default slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds one API call other than getUpdates; default 30s.
	RequestTimeout time.Duration
	// EditEvery paces the edits of a reply streamed into one message;
	// default 1.5s, as Telegram allows about one edit a second per chat
	// before answering 429.
	EditEvery time.Duration
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
	return fmt.Sprintf("telegram.Config{ServerURL: %q, Token: %s}", c.ServerURL, platform.Redacted(c.Token))
}

// LogValue keeps the token out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("server_url", c.ServerURL), slog.String("token", platform.Redacted(c.Token)))
}

// Adapter is the Telegram platform adapter. It implements
// platform.Adapter, Threader, Typer, Editor, Limiter, Commander,
// Prober and DownloadLimiter.
type Adapter struct {
	cfg    Config
	api    *bot.Bot
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	username string            // the bot's @username, learned from getMe
	refused  platform.Refusals // optional methods already logged as refused
	next     int64             // the getUpdates offset: updates below it are stored

	// Used by Run alone (one at a time): updates and messages handed over
	// lately, so a repeat is not handed over again.
	seenUpdate, seenMsg *platform.Seen
}

var (
	_ platform.Adapter   = (*Adapter)(nil)
	_ platform.Threader  = (*Adapter)(nil)
	_ platform.Typer     = (*Adapter)(nil)
	_ platform.Editor    = (*Adapter)(nil)
	_ platform.Limiter   = (*Adapter)(nil)
	_ platform.Commander = (*Adapter)(nil)
	_ platform.EditPacer = (*Adapter)(nil)
	_ platform.Prober    = (*Adapter)(nil)

	_ platform.DownloadLimiter = (*Adapter)(nil)
)

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
	if cfg.EditEvery <= 0 {
		cfg.EditEvery = 1500 * time.Millisecond
	}
	cfg.RequestTimeout = platform.RequestTimeout(cfg.RequestTimeout)
	base := cfg.HTTPClient
	if base == nil {
		base = platform.NewHTTPClient()
	}
	c := *base
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = statusAnswers{next: next}
	client := &c
	log := platform.Logger(cfg.Logger, Name)
	a := &Adapter{cfg: cfg, client: client, log: log, seenUpdate: platform.NewSeen(platform.SeenLimit), seenMsg: platform.NewSeen(platform.SeenLimit)}
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

// EditEvery paces streamed edits of one message (Config.EditEvery).
func (a *Adapter) EditEvery() time.Duration { return a.cfg.EditEvery }

// MessageLen counts UTF-16 code units, as Telegram does.
func (a *Adapter) MessageLen(s string) int { return platform.UTF16Len(s) }

// Username is the bot's @username (without "@") once Run has learned it.
func (a *Adapter) Username() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.username
}

// statusAnswers turns an HTTP answer that is not the Bot API's JSON (a
// proxy's HTML page, a server's plain "404 page not found") into a Bot API
// error answer carrying the HTTP status, so the library reports its code
// instead of quoting the whole page. The status, and whether the Bot API
// gave it, is also handed to the call that made the request (see
// answered), which classifies the failure by status and method alone.
type statusAnswers struct{ next http.RoundTripper }

// answer is how the server answered one call.
type answer struct {
	status int  // the HTTP status
	page   bool // not a Bot API answer: a web server or proxy in front of it spoke
}

type answerKey struct{}

// answered is ctx with a place for the answer to the call made with it.
func answered(ctx context.Context, into *answer) context.Context {
	return context.WithValue(ctx, answerKey{}, into)
}

func (s statusAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read %d answer: %w", resp.StatusCode, err)
	}
	var probe struct {
		OK *bool `json:"ok"`
	}
	page := json.Unmarshal(data, &probe) != nil || probe.OK == nil
	if page {
		body, _ := json.Marshal(map[string]any{
			"ok": false, "error_code": resp.StatusCode,
			"description": http.StatusText(resp.StatusCode) + " (not a Bot API answer)",
		})
		data = body
		resp.Header.Set("Content-Type", "application/json")
	}
	if into, ok := req.Context().Value(answerKey{}).(*answer); ok {
		*into = answer{status: resp.StatusCode, page: page}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// Package slack connects baton to Slack: events arrive over Socket Mode
// (no public URL needed), replies go out through the Web API as mrkdwn,
// split at a readable length and grown by chat.update while the model
// writes; a handoff opens a thread under a root message in the home
// channel. Files come with their messages, read from Slack's file host
// with the bot token, and go out by the external upload flow (files.go).
//
// Addresses: a direct message is platform.DM with Chat = the D… channel
// id (and Thread = the thread's ts for a thread inside the DM); a message
// at the top level of a channel, private channel or group DM is
// platform.Group; a thread reply in one of those is platform.Thread with
// Chat = the channel id and Thread = the root message's ts. NewThread
// returns exactly these addresses for the threads it starts, so a
// binding made at handoff matches the person's later replies there.
//
// Socket Mode is driven here rather than by the library's managed client,
// which reconnects and backs off on its own: one Run is one connection,
// every envelope is acknowledged only after the gateway stored its event,
// and a disconnect request or a dropped socket ends Run so the gateway's
// supervisor restarts it like any other platform.
package slack

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/baton-agent/baton/internal/platform"
)

// Name is the platform name in addresses and config.
const Name = "slack"

// MaxMessageLen is the longest reply part posted, in characters of the
// markdown. Slack takes up to 40,000 but asks for at most 4,000 for
// messages people read; longer answers are split.
const MaxMessageLen = 4000

// The environment variables Spec reads the tokens from.
const (
	EnvBotToken = "SLACK_BOT_TOKEN" // xoxb-…: the Web API
	EnvAppToken = "SLACK_APP_TOKEN" // xapp-…: Socket Mode (connections:write)
)

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// Config configures the adapter. BotToken and AppToken are required.
type Config struct {
	// BotToken (xoxb-) calls the Web API. A secret: never logged.
	BotToken string
	// AppToken (xapp-, scope connections:write) opens Socket Mode
	// connections. A secret: never logged.
	AppToken string
	// APIURL is the Web API's base, ending in "/api/"; default Slack's.
	APIURL string
	// HTTPClient makes the Web API calls; default one without a global
	// timeout (each call gets RequestTimeout).
	HTTPClient *http.Client
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds one Web API call; default 30s.
	RequestTimeout time.Duration
	// PingEvery is how often the socket is checked with a ping; a ping
	// unanswered within the same time ends Run. Default 30s.
	PingEvery time.Duration
	// FilesURL is Slack's file host, default DefaultFilesURL: only a
	// file there is ever downloaded, and only there does the bot token go
	// with a download (tests point it at a fake).
	FilesURL string
	// Memory keeps where people last spoke to baton across restarts, so
	// that what they said while baton was away is fetched (catchup.go),
	// and the files stored deliveries uploaded (files.go); nil keeps them
	// in memory only.
	Memory platform.Memory
}

// String describes c without its tokens.
func (c Config) String() string {
	return fmt.Sprintf("slack.Config{APIURL: %q, BotToken: %s, AppToken: %s}", c.APIURL, platform.Redacted(c.BotToken), platform.Redacted(c.AppToken))
}

// LogValue keeps the tokens out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("api_url", c.APIURL),
		slog.String("bot_token", platform.Redacted(c.BotToken)), slog.String("app_token", platform.Redacted(c.AppToken)))
}

// Adapter is the Slack platform adapter. It implements platform.Adapter,
// Threader, Typer, Editor, EditPacer, Limiter, DownloadLimiter and
// FileSender.
type Adapter struct {
	cfg   Config
	api   *slack.Client
	http  *http.Client // downloads and files.info
	files *url.URL     // Config.FilesURL
	log   *slog.Logger

	mu      sync.Mutex
	botUser string            // the bot's user id (U…), from auth.test
	refused platform.Refusals // optional methods already logged as refused
	seen    *platform.Seen    // message ids handed over lately (a mention arrives twice)
	// Where people last spoke to baton (catchup.go); loaded from
	// Config.Memory once, saved every saveMarksEvery and when Run ends.
	marks       *platform.Marks[place]
	marksLoaded bool
	marksSaved  time.Time

	keptMu sync.Mutex // one read-modify-write of the deliveries tried at a time
	kept   []tried    // the deliveries tried, without Config.Memory
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

// New makes an adapter; it does not contact Slack (Run does).
func New(cfg Config) (*Adapter, error) {
	cfg.BotToken, cfg.AppToken = strings.TrimSpace(cfg.BotToken), strings.TrimSpace(cfg.AppToken)
	switch {
	case cfg.BotToken == "":
		return nil, errors.New("slack: no bot token (xoxb-…; set slack.bot_token or " + EnvBotToken + ")")
	case cfg.AppToken == "":
		return nil, errors.New("slack: no app-level token (xapp-… with connections:write; set slack.app_token or " + EnvAppToken + ")")
	case !strings.HasPrefix(cfg.AppToken, "xapp-"):
		return nil, errors.New("slack: the app-level token must start with xapp- (Basic Information → App-Level Tokens)")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	if cfg.FilesURL == "" {
		cfg.FilesURL = DefaultFilesURL
	}
	files, err := url.Parse(strings.TrimRight(cfg.FilesURL, "/"))
	if err != nil || files.Host == "" {
		return nil, fmt.Errorf("slack: files URL %q is not an absolute URL", cfg.FilesURL)
	}
	cfg.RequestTimeout = platform.RequestTimeout(cfg.RequestTimeout)
	if cfg.PingEvery <= 0 {
		cfg.PingEvery = 30 * time.Second
	}
	log := platform.Logger(cfg.Logger, Name)
	client := platform.HTTPClientOr(cfg.HTTPClient)
	// Retries stay off (the library's default): the gateway owns them.
	api := slack.New(cfg.BotToken,
		slack.OptionAPIURL(cfg.APIURL),
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionHTTPClient(client),
	)
	return &Adapter{cfg: cfg, api: api, http: client, files: files, log: log,
		seen: platform.NewSeen(platform.SeenLimit), marks: platform.NewMarks[place](maxMarked, newerTS)}, nil
}

// Name is "slack".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 4000.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts characters (runes).
func (a *Adapter) MessageLen(s string) int { return utf8.RuneCountInString(s) }

// EditEvery paces streamed edits: chat.update is a Tier 3 method (about
// 50 calls a minute).
func (a *Adapter) EditEvery() time.Duration { return 1500 * time.Millisecond }

// BotUserID is the bot's user id once Run has learned it.
func (a *Adapter) BotUserID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botUser
}

// Slack's error codes, by what they mean to baton.
var (
	// refusedCodes: the token is wrong, revoked or its workspace gone.
	refusedCodes = map[string]bool{
		"invalid_auth": true, "not_authed": true, "account_inactive": true,
		"token_revoked": true, "token_expired": true, "team_access_not_granted": true,
	}
	// transientCodes: Slack's own trouble; worth another try.
	transientCodes = map[string]bool{
		"internal_error": true, "fatal_error": true, "service_unavailable": true,
		"request_timeout": true, "ratelimited": true, "team_added_to_org": true,
	}
	// absentCodes: this optional method is not available to baton here.
	absentCodes = map[string]bool{
		"unknown_method": true, "method_deprecated": true, "missing_scope": true,
		"not_allowed_token_type": true, "feature_not_enabled": true,
		"restricted_action_non_threadable_channel": true, "no_permission": true,
	}
)

// classify names the failure of one Web API call for the gateway, which
// alone decides on retries: a 429 asks for its Retry-After, a refused token
// is Refused, an answer Slack will give again (an ok:false error code, a
// 4xx) is permanent, the rest (5xx, network) transient.
func classify(what string, err error) error {
	err = fmt.Errorf("slack: %s: %w", what, err)
	var (
		rl   *slack.RateLimitedError
		code slack.StatusCodeError
		resp slack.SlackErrorResponse
	)
	switch {
	case errors.As(err, &rl):
		return platform.RetryAfter(max(rl.RetryAfter, time.Second), err)
	case errors.As(err, &code):
		switch {
		case code.Code == http.StatusUnauthorized:
			return platform.Refused(err)
		case code.Code == http.StatusTooManyRequests, code.Code >= 500:
			return err
		case code.Code >= 400:
			return platform.Permanent(err)
		}
	case errors.As(err, &resp):
		switch {
		case refusedCodes[resp.Err]:
			return platform.Refused(err)
		case transientCodes[resp.Err]:
			return err
		}
		return platform.Permanent(err)
	}
	return err
}

// notOffered reports a failure meaning Slack lacks the method itself, for
// every channel (unknown_method, method_deprecated, a 404 or 501); the
// other absent codes (a scope, a channel's permission) may differ by
// place.
func notOffered(err error) bool {
	var resp slack.SlackErrorResponse
	var code slack.StatusCodeError
	return errors.As(err, &resp) && (resp.Err == "unknown_method" || resp.Err == "method_deprecated") ||
		errors.As(err, &code) && (code.Code == http.StatusNotFound || code.Code == http.StatusNotImplemented)
}

// absent reports a failure meaning an optional method is not available.
func absent(err error) bool {
	var resp slack.SlackErrorResponse
	var code slack.StatusCodeError
	return errors.As(err, &resp) && absentCodes[resp.Err] ||
		errors.As(err, &code) && (code.Code == http.StatusNotFound || code.Code == http.StatusNotImplemented)
}

// optional classifies the failure of an optional method: Unsupported
// when the method is not available here (logged once), else as classify.
func (a *Adapter) optional(method, what string, err error) error {
	if absent(err) {
		a.refused.Log(a.log, method, err)
		err = fmt.Errorf("slack: %s: %w", what, err)
		if notOffered(err) {
			return platform.NotOffered(err)
		}
		return platform.Unsupported(err)
	}
	return classify(what, err)
}

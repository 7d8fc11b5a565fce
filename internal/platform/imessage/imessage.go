// Package imessage connects baton to iMessage through a BlueBubbles server
// (a Mac running BlueBubbles, signed in to the Apple ID baton answers as):
// replies go out by its REST API (POST /api/v1/message/text, the server
// password as ?password=), messages come in by its webhook ("new-message")
// POSTed to an address baton listens on. The webhook carries a shared
// secret in its URL; requests without it are refused.
//
// BlueBubbles does not retry a webhook that failed, and none arrives while
// baton is restarting, so Run also asks the server for the messages after
// the last one stored (POST /api/v1/message/query): when it starts, and at
// every health check. Nothing a person wrote is lost that way.
//
// iMessage has no threads: a handoff lands in the home chat. Addresses: a
// chat is named by its BlueBubbles chat guid ("iMessage;-;+15551234567" a
// one-to-one chat, platform.DM; "iMessage;+;chat123…" a group,
// platform.Group). Files come with their message (downloaded from the
// server's /api/v1/attachment/{guid}/download) and go out by
// /api/v1/message/attachment. Tapbacks and baton's own messages are not
// handed over.
package imessage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/styled"
)

// Name is the platform name in addresses and config.
const Name = "imessage"

// MaxMessageLen is the longest reply sent as one message, in characters:
// iMessage takes longer texts, but they arrive as one unwieldy bubble.
const MaxMessageLen = 10000

// WebhookPath is where the adapter takes BlueBubbles' webhooks.
const WebhookPath = "/bluebubbles"

// Config configures the adapter. URL, Password and Listen are required.
type Config struct {
	// URL is the BlueBubbles server (http://mac.local:1234).
	URL string
	// Password is the server password. A secret: never logged.
	Password string
	// Listen is where the webhook listener binds (127.0.0.1:8091; port 0
	// picks one, kept across restarts).
	Listen string
	// WebhookSecret must be in every webhook's URL as ?secret=; default
	// the server password.
	WebhookSecret string
	// PrivateAPI says the server has BlueBubbles' Private API on: replies
	// are sent through it and typing is shown. Without it, typing is
	// unsupported.
	PrivateAPI bool
	// CheckEvery is how often Run checks the server and asks for messages
	// a webhook may have missed; default 30s.
	CheckEvery time.Duration
	// RequestTimeout bounds one API call; default 30s.
	RequestTimeout time.Duration
	// HTTPClient makes the requests; default a client without a global
	// timeout.
	HTTPClient *http.Client
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
	// Memory keeps where the catch-up starts across restarts of baton,
	// so that what people wrote while baton was down is fetched; nil
	// starts each process from its first connection.
	Memory platform.Memory
}

// Adapter is the iMessage platform adapter: platform.Adapter, Typer,
// Limiter, DownloadLimiter and FileSender.
type Adapter struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	addr   string // the listener's address, fixed at New

	handMu sync.Mutex // one message handed over at a time

	mu         sync.Mutex
	ln         net.Listener   // open from New until a Run ends; reopened on addr
	since      int64          // catch up with messages after this (ms); 0 until first live
	kept       int64          // the catch-up point last kept in Config.Memory
	failed     int64          // earliest message Receive refused (ms), 0 for none
	failedGUID string         // its guid
	handed     *platform.Seen // guids stored lately, so a catch-up does not repeat them
	refused    bool           // typing refusal already logged

	sentFiles sentFiles
}

var (
	_ platform.Adapter = (*Adapter)(nil)
	_ platform.Typer   = (*Adapter)(nil)
	_ platform.Limiter = (*Adapter)(nil)
)

// New makes an adapter and opens its webhook listener; it does not
// contact the server (Run does).
func New(cfg Config) (*Adapter, error) {
	cfg.URL = strings.TrimRight(strings.TrimSpace(cfg.URL), "/")
	switch {
	case cfg.URL == "":
		return nil, errors.New("imessage: no BlueBubbles server url")
	case cfg.Password == "":
		return nil, errors.New("imessage: no BlueBubbles server password")
	case cfg.Listen == "":
		return nil, errors.New("imessage: no webhook listen address")
	}
	if cfg.WebhookSecret == "" {
		cfg.WebhookSecret = cfg.Password
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 30 * time.Second
	}
	cfg.RequestTimeout = platform.RequestTimeout(cfg.RequestTimeout)
	client := platform.HTTPClientOr(cfg.HTTPClient)
	log := platform.Logger(cfg.Logger, Name)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("imessage: webhook listener on %s: %w", cfg.Listen, err)
	}
	return &Adapter{cfg: cfg, client: client, log: log, addr: ln.Addr().String(), ln: ln, handed: platform.NewSeen(1000)}, nil
}

// Name is "imessage".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 10000 characters.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts characters (runes).
func (a *Adapter) MessageLen(s string) int { return utf8.RuneCountInString(s) }

// WebhookURL is the address to give BlueBubbles (Settings → API &
// Webhooks), secret included.
func (a *Adapter) WebhookURL() string {
	return "http://" + a.addr + WebhookPath + "?secret=" + url.QueryEscape(a.cfg.WebhookSecret)
}

// Close closes the webhook listener if no Run holds it.
func (a *Adapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return nil
	}
	err := a.ln.Close()
	a.ln = nil
	return err
}

// Send posts text (markdown shown as plain text) to a chat, split at
// MaxMessageLen, and returns the guid of the first message.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	if err := check(to); err != nil {
		return "", err
	}
	var first string
	for _, part := range platform.Split(text, MaxMessageLen, a.MessageLen) {
		plain := styled.Render(part, nil).Plain
		if strings.TrimSpace(plain) == "" {
			continue
		}
		guid, err := a.sendText(ctx, to, tempGUID(), plain)
		if err != nil {
			return first, fmt.Errorf("imessage: send: %w", err)
		}
		if first == "" {
			first = guid
		}
	}
	if first == "" {
		return "", platform.Permanent(fmt.Errorf("imessage: send: empty message"))
	}
	return first, nil
}

// sendText posts one text message and returns its guid.
func (a *Adapter) sendText(ctx context.Context, to platform.Address, tempGUID, text string) (string, error) {
	body := map[string]any{"chatGuid": to.Chat, "tempGuid": tempGUID, "message": text, "method": a.method()}
	var sent struct {
		GUID string `json:"guid"`
	}
	if err := a.call(ctx, http.MethodPost, "/api/v1/message/text", body, &sent); err != nil {
		return "", err
	}
	return sent.GUID, nil
}

// Typing shows the typing bubble, which needs the Private API.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	if err := check(at); err != nil {
		return err
	}
	if !a.cfg.PrivateAPI {
		return platform.NotOffered(fmt.Errorf("imessage: typing in %s: needs the BlueBubbles Private API (private_api: true)", at.Key()))
	}
	err := a.call(ctx, http.MethodPost, "/api/v1/chat/"+url.PathEscape(at.Chat)+"/typing", nil, nil)
	if err == nil {
		return nil
	}
	if errors.Is(err, platform.ErrUnsupported) {
		a.mu.Lock()
		first := !a.refused
		a.refused = true
		a.mu.Unlock()
		if first {
			a.log.Warn("imessage: the server refused typing; continuing without it", "err", err)
		}
	}
	return fmt.Errorf("imessage: typing in %s: %w", at.Key(), err)
}

func check(to platform.Address) error {
	if to.Platform != Name || to.Chat == "" || to.Thread != "" {
		return platform.Permanent(fmt.Errorf("imessage: %q is not an iMessage chat", to.Key()))
	}
	return nil
}

func tempGUID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "baton-" + hex.EncodeToString(b)
}

// answer is BlueBubbles' envelope around every answer.
type answer struct {
	Status  int             `json:"status"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// call makes one API call with the password and classifies its failure;
// out, when not nil, receives the answer's data.
func (a *Adapter) call(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	var (
		rd          io.Reader
		contentType string
	)
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return platform.Permanent(fmt.Errorf("%s: %w", path, err))
		}
		rd, contentType = bytes.NewReader(data), "application/json"
	}
	resp, err := a.request(ctx, method, path, contentType, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return a.answer(path, resp, out)
}

// request sends one request to the configured server, the password in
// its query; a failure to reach it is reported without the URL, which
// holds the password.
func (a *Adapter) request(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.cfg.URL+path+"?password="+url.QueryEscape(a.cfg.Password), body)
	if err != nil {
		return nil, platform.Permanent(fmt.Errorf("%s: bad server url", path))
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp, nil
}

// answer reads resp's envelope into out (when not nil), or classifies
// its failure.
func (a *Adapter) answer(path string, resp *http.Response, out any) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", path, err)
	}
	var ans answer
	jsonErr := json.Unmarshal(data, &ans)
	if resp.StatusCode == http.StatusOK && jsonErr == nil && (ans.Status == 0 || ans.Status == http.StatusOK) {
		if out != nil && len(ans.Data) > 0 {
			if err := json.Unmarshal(ans.Data, out); err != nil {
				return fmt.Errorf("%s: data: %w", path, err)
			}
		}
		return nil
	}
	status := resp.StatusCode
	if status == http.StatusOK {
		status = ans.Status
	}
	why := http.StatusText(status)
	switch {
	case jsonErr != nil:
		why = platform.OneLine(errors.New(string(data)))
	case ans.Error != nil && ans.Error.Message != "":
		why = ans.Error.Message
	case ans.Message != "":
		why = ans.Message
	}
	err = fmt.Errorf("%s: HTTP %d: %s", path, status, why)
	low := strings.ToLower(why)
	switch {
	case status == http.StatusUnauthorized:
		return platform.Refused(err)
	case status == http.StatusTooManyRequests:
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
			return platform.RetryAfter(time.Duration(secs)*time.Second, err)
		}
		return err
	case strings.Contains(low, "private api"): // the server's setting, for every chat
		return platform.NotOffered(err)
	case status == http.StatusNotFound:
		return platform.Unsupported(err)
	case status >= 400 && status < 500:
		return platform.Permanent(err)
	}
	return err
}

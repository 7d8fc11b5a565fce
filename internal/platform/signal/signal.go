// Package signal connects baton to Signal through a signal-cli daemon
// (`signal-cli -a +NUMBER daemon --http 127.0.0.1:PORT
// --receive-mode=on-connection`: it then takes messages from Signal's
// servers only while baton's event stream is open, so none is taken
// while baton is away): JSON-RPC calls on
// POST /api/v1/rpc to send and show typing, and the daemon's Server-Sent
// Events stream on GET /api/v1/events for what people write.
//
// Signal has no threads: a handoff lands in the home chat. Addresses: a
// one-to-one chat is platform.DM with Chat = the other person's number
// (or their UUID when the number is hidden); the owner's "Note to Self"
// is the DM whose Chat is the account itself; a group is platform.Group
// with Chat = the base64 group id.
//
// Files: a message's attachments arrive as attachments read through the
// daemon's getAttachment (the daemon downloads them as they come);
// SendFile sends one as a data URI attachment. 100 MB either way.
//
// When signal-cli runs as a linked device of the owner's own phone, the
// owner's words reach baton only in Note to Self: what they write to other
// people (sync messages to anyone else) is never handed to the gateway.
package signal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/styled"
)

// Name is the platform name in addresses and config.
const Name = "signal"

// MaxMessageLen is the longest text sent as one message, in UTF-8 bytes:
// Signal clients send a longer body as a "long text" attachment, which
// other clients show cut short.
const MaxMessageLen = 2000

// JSON-RPC error codes signal-cli answers with.
const (
	codeUserError      = -1 // the request cannot succeed (unregistered recipient, unknown group)
	codeIOError        = -3 // the network or Signal's servers failed
	codeUntrustedKey   = -4 // the recipient's safety number changed
	codeRateLimit      = -5 // Signal's servers rate-limit the account
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// Config configures the adapter. Only Account is required.
type Config struct {
	// URL is the daemon's HTTP address; default http://127.0.0.1:8080.
	URL string
	// Account is the phone number signal-cli runs as (+4915…): messages
	// sent to it from the owner's other devices are Note to Self.
	Account string
	// HTTPClient makes the requests; default a client without a global
	// timeout (each call gets RequestTimeout; the event stream none).
	HTTPClient *http.Client
	// RequestTimeout bounds one JSON-RPC call; default 30s.
	RequestTimeout time.Duration
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
}

// Adapter is the Signal platform adapter: platform.Adapter, Typer,
// Limiter, DownloadLimiter and FileSender.
type Adapter struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	nextID atomic.Int64 // JSON-RPC request ids

	mu sync.Mutex
	// pending is an event Receive refused, which the daemon will not
	// send again: the next Run hands it over first.
	pending *platform.Event
	refused platform.Refusals // optional methods already logged as refused
}

var (
	_ platform.Adapter = (*Adapter)(nil)
	_ platform.Typer   = (*Adapter)(nil)
	_ platform.Limiter = (*Adapter)(nil)
)

// New makes an adapter; it does not contact the daemon (Run does).
func New(cfg Config) (*Adapter, error) {
	cfg.Account = strings.TrimSpace(cfg.Account)
	if cfg.Account == "" {
		return nil, errors.New("signal: no account (the number signal-cli runs as)")
	}
	if cfg.URL == "" {
		cfg.URL = "http://127.0.0.1:8080"
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	cfg.RequestTimeout = platform.RequestTimeout(cfg.RequestTimeout)
	return &Adapter{cfg: cfg, client: platform.HTTPClientOr(cfg.HTTPClient), log: platform.Logger(cfg.Logger, Name)}, nil
}

// Name is "signal".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 2000 bytes.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts UTF-8 bytes.
func (a *Adapter) MessageLen(s string) int { return len(s) }

// Send posts markdown text as Signal text with styles (bold, italic,
// strikethrough, monospace), split at MaxMessageLen, and returns the
// timestamp of the first message, which is its id on Signal.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	params, err := a.target(to)
	if err != nil {
		return "", err
	}
	var first string
	for _, part := range platform.Split(text, MaxMessageLen, a.MessageLen) {
		body := styled.Render(part, nil)
		if strings.TrimSpace(body.Plain) == "" {
			continue
		}
		p := clone(params)
		p["message"] = body.Plain
		if styles := textStyles(body); len(styles) > 0 {
			p["textStyle"] = styles
		}
		var res struct {
			Timestamp int64 `json:"timestamp"`
		}
		if err := a.call(ctx, "send", p, &res); err != nil {
			return first, fmt.Errorf("signal: send: %w", err)
		}
		if first == "" {
			first = strconv.FormatInt(res.Timestamp, 10)
		}
	}
	if first == "" {
		return "", platform.Permanent(fmt.Errorf("signal: send: empty message"))
	}
	return first, nil
}

// textStyles writes spans as signal-cli's "start:length:STYLE", counted in
// UTF-16 code units as Signal counts them.
func textStyles(t styled.Text) []string {
	var out []string
	for _, s := range t.Spans {
		st := s.Style
		if st == styled.Block {
			st = styled.Monospace
		}
		start := styled.UTF16(t.Plain, s.Start)
		out = append(out, fmt.Sprintf("%d:%d:%s", start, styled.UTF16(t.Plain, s.End)-start, st))
	}
	return out
}

// Typing shows "typing…" in the chat (sendTyping); tried once.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	params, err := a.target(at)
	if err != nil {
		return err
	}
	err = a.call(ctx, "sendTyping", params, nil)
	if err == nil {
		return nil
	}
	if errors.Is(err, platform.ErrUnsupported) {
		a.refused.Log(a.log, "sendTyping", err)
	}
	return fmt.Errorf("signal: typing in %s: %w", at.Key(), err)
}

// target is the JSON-RPC parameters naming an address's chat.
func (a *Adapter) target(to platform.Address) (map[string]any, error) {
	if to.Platform != Name || to.Chat == "" {
		return nil, platform.Permanent(fmt.Errorf("signal: %q is not a Signal address", to.Key()))
	}
	switch to.Kind {
	case platform.DM:
		return map[string]any{"recipient": []string{to.Chat}}, nil
	case platform.Group:
		return map[string]any{"groupId": to.Chat}, nil
	}
	return nil, platform.Permanent(fmt.Errorf("signal: %q: Signal has no threads", to.Key()))
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// call makes one JSON-RPC call within RequestTimeout and classifies its
// failure; result, when not nil, receives the answer's result.
func (a *Adapter) call(ctx context.Context, method string, params map[string]any, result any) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	body, err := a.request(method, params)
	if err != nil {
		return platform.Permanent(fmt.Errorf("%s: %w", method, err))
	}
	resp, err := a.post(ctx, method, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return readAnswer(method, resp.Body, result)
}

// request encodes a JSON-RPC request with a fresh id.
func (a *Adapter) request(method string, params map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": a.nextID.Add(1)})
}

// post sends an encoded request of length bytes and returns the answer
// of a daemon that took it (HTTP 200), whose body the caller reads and
// closes; any other answer is the error, classified.
func (a *Adapter) post(ctx context.Context, method string, body io.Reader, length int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.URL+"/api/v1/rpc", body)
	if err != nil {
		return nil, platform.Permanent(fmt.Errorf("%s: %w", method, err))
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, httpError(method, resp, data)
	}
	return resp, nil
}

// readAnswer reads a JSON-RPC answer (at most 1 MB): its error,
// classified, or its result into result when that is not nil.
func readAnswer(method string, body io.Reader, result any) error {
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", method, err)
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return fmt.Errorf("%s: not a JSON-RPC answer: %w", method, err)
	}
	if answer.Error != nil {
		return classifyRPC(method, answer.Error)
	}
	if result != nil && len(answer.Result) > 0 {
		if err := json.Unmarshal(answer.Result, result); err != nil {
			return fmt.Errorf("%s: result: %w", method, err)
		}
	}
	return nil
}

// classifyRPC marks a JSON-RPC error by what a retry can do about it.
func classifyRPC(method string, e *rpcError) error {
	err := fmt.Errorf("%s: %w", method, e)
	switch e.Code {
	case codeMethodNotFound:
		return platform.NotOffered(err) // the daemon lacks the method
	case codeRateLimit:
		if wait := retryAfterOf(e.Data); wait > 0 {
			return platform.RetryAfter(wait, err)
		}
		return err
	case codeUserError, codeUntrustedKey, codeInvalidRequest, codeInvalidParams:
		return platform.Permanent(err)
	}
	return err // codeIOError, internal errors: transient
}

// retryAfterOf reads the wait a rate-limit answer carries in its send
// results (data.response.results[].retryAfterSeconds).
func retryAfterOf(data json.RawMessage) time.Duration {
	var d struct {
		Response struct {
			Results []struct {
				RetryAfterSeconds int `json:"retryAfterSeconds"`
			} `json:"results"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &d) != nil {
		return 0
	}
	var wait time.Duration
	for _, r := range d.Response.Results {
		wait = max(wait, time.Duration(r.RetryAfterSeconds)*time.Second)
	}
	return wait
}

// httpError classifies an answer that is not JSON-RPC (a proxy's page, a
// daemon refusing the request), reduced to one line.
func httpError(what string, resp *http.Response, body []byte) error {
	err := fmt.Errorf("%s: HTTP %d: %s", what, resp.StatusCode, platform.OneLine(errors.New(string(body))))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
			return platform.RetryAfter(time.Duration(secs)*time.Second, err)
		}
		return err
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return platform.NotOffered(err) // the daemon lacks the endpoint
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return platform.Permanent(err)
	}
	return err
}

package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"

	"github.com/baton-agent/baton/internal/platform"
)

// Discord's JSON error codes baton branches on.
const (
	codeUnknownRoute      = 0     // with a 404: no such endpoint here
	codeMissingAccess     = 50001 // the bot cannot see the channel
	codeMissingPermission = 50013 // e.g. Create Public Threads
	codeWrongChannelType  = 50024 // cannot execute action on this channel type
)

// Send posts markdown (Discord renders it itself) to an address and
// returns the id of the first message posted. Text longer than
// MaxMessageLen is split first (the gateway normally has done it already).
// Every message mentions nobody. A message of a stored delivery carries
// a nonce derived from its key, enforced: Discord gives back the message
// that nonce made in the last few minutes instead of posting another, so
// a try after a lost answer or a restart posts nothing twice. A refusal
// Discord will repeat (unknown channel, missing access, bad request)
// wraps platform.ErrPermanent; a 429 asks for its retry_after; other
// failures are transient.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	ch, err := channelOf(to)
	if err != nil {
		return "", err
	}
	var first string
	for i, part := range platform.Split(text, MaxMessageLen, platform.UTF16Len) {
		if strings.TrimSpace(part) == "" {
			continue // Discord refuses empty messages
		}
		var m struct {
			ID string `json:"id"`
		}
		msg := discord.MessageCreate{Content: part, AllowedMentions: noMentionsPtr()}
		if nonce, ok := deliveryNonce(ctx, to, i); ok {
			msg.Nonce, msg.EnforceNonce = nonce, true
		}
		err := a.call(ctx, "POST /channels/{id}/messages", rest.CreateMessage.Compile(nil, ch), msg, &m)
		if err != nil {
			return first, fmt.Errorf("discord: send: %w", final(err))
		}
		if first == "" {
			first = m.ID
		}
	}
	if first == "" {
		return "", fmt.Errorf("discord: send: empty message: %w", platform.ErrPermanent)
	}
	return first, nil
}

// deliveryNonce is the nonce of part i of the stored delivery ctx names
// (platform.DeliveryToken): 25 characters, Discord's longest, starting
// with a letter so that it is never read as a number.
func deliveryNonce(ctx context.Context, to platform.Address, i int) (string, bool) {
	tok, ok := platform.DeliveryToken(ctx, to, i, maxNonce-1)
	if !ok {
		return "", false
	}
	return "b" + tok, true
}

// Edit replaces a message's content. An edit cannot be split, so text
// beyond the limit is cut at a good boundary.
func (a *Adapter) Edit(ctx context.Context, at platform.Address, msgID, text string) error {
	ch, err := channelOf(at)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(msgID, 10, 64); err != nil {
		return fmt.Errorf("discord: edit %q in %s: bad message id: %w", msgID, at.Key(), platform.ErrPermanent)
	}
	if parts := platform.Split(text, MaxMessageLen, platform.UTF16Len); len(parts) > 0 {
		text = parts[0]
	}
	err = a.call(ctx, "PATCH /channels/{id}/messages/{id}", rest.UpdateMessage.Compile(nil, ch, msgID),
		discord.MessageUpdate{Content: &text, AllowedMentions: noMentionsPtr()}, nil)
	if err == nil {
		return nil
	}
	if unknownRoute(err) {
		a.refused.Log(a.log, "edit message", err)
		return fmt.Errorf("discord: edit in %s: %w", at.Key(), platform.NotOffered(err))
	}
	return fmt.Errorf("discord: edit in %s: %w", at.Key(), final(err))
}

// Typing shows "baton is typing…" for about ten seconds. It is tried once:
// a late typing indicator is worthless.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	ch, err := channelOf(at)
	if err != nil {
		return err
	}
	err = a.call(ctx, "POST /channels/{id}/typing", rest.SendTyping.Compile(nil, ch), nil, nil)
	if err == nil {
		return nil
	}
	switch {
	case unknownRoute(err):
		a.refused.Log(a.log, "typing", err)
		return fmt.Errorf("discord: typing in %s: %w", at.Key(), platform.NotOffered(err))
	case status(err) == http.StatusForbidden: // this channel only
		a.refused.Log(a.log, "typing", err)
		return fmt.Errorf("discord: typing in %s: %w", at.Key(), platform.Unsupported(err))
	}
	return fmt.Errorf("discord: typing in %s: %w", at.Key(), err)
}

// NewThread opens a public thread named after title in the text channel
// holding home, archived after a day without messages, and returns its
// address exactly as a person's message in it will carry. Where threads
// cannot be opened — a DM, a channel of another type, a bot without the
// Create Public Threads permission there — the error wraps
// platform.ErrUnsupported and the caller uses home itself.
func (a *Adapter) NewThread(ctx context.Context, home platform.Address, title string) (platform.Address, error) {
	home = home.Home()
	if home.Kind == platform.DM {
		return platform.Address{}, fmt.Errorf("discord: new thread in %s: Discord has no threads in direct messages: %w", home.Key(), platform.ErrUnsupported)
	}
	parent, err := channelOf(home)
	if err != nil {
		return platform.Address{}, err
	}
	var th wireChannel
	err = a.call(ctx, "POST /channels/{id}/threads", rest.CreateThread.Compile(nil, parent),
		discord.GuildPublicThreadCreate{Name: threadName(title), AutoArchiveDuration: discord.AutoArchiveDuration24h}, &th)
	if err == nil && th.ID == "" {
		err = errors.New("POST /channels/{id}/threads: answer without a thread id")
	}
	if err != nil {
		var ae *apiError
		switch {
		case errors.As(err, &ae) && (ae.Code == codeMissingPermission || ae.Code == codeMissingAccess):
			a.refused.Log(a.log, "create thread", err)
			return platform.Address{}, fmt.Errorf("discord: the bot may not create threads in channel %s (give it Create Public Threads there): %w", parent, platform.Unsupported(err))
		case unknownRoute(err):
			a.refused.Log(a.log, "create thread", err)
			return platform.Address{}, fmt.Errorf("discord: new thread in %s: %w", home.Key(), platform.NotOffered(err))
		case errors.As(err, &ae) && ae.Code == codeWrongChannelType: // this channel only
			a.refused.Log(a.log, "create thread", err)
			return platform.Address{}, fmt.Errorf("discord: new thread in %s: %w", home.Key(), platform.Unsupported(err))
		}
		return platform.Address{}, fmt.Errorf("discord: new thread in %s: %w", home.Key(), final(err))
	}
	if th.ParentID == "" {
		th.ParentID = parent
	}
	th.Type = discord.ChannelTypeGuildPublicThread
	a.learn(th)
	return platform.Address{Platform: Name, Kind: platform.Thread, Chat: th.ParentID, Thread: th.ID}, nil
}

// threadName fits a session title to Discord's 1–100 character channel
// name.
func threadName(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return "baton"
	}
	r := []rune(title)
	if len(r) <= maxThreadName {
		return title
	}
	return strings.TrimSpace(string(r[:maxThreadName-1])) + "…"
}

// channelOf is the channel a message to an address goes to: the thread's
// own channel, or the chat's.
func channelOf(to platform.Address) (string, error) {
	ch := to.Chat
	if to.Thread != "" {
		ch = to.Thread
	}
	if to.Platform != Name || !isSnowflake(ch) {
		return "", fmt.Errorf("discord: %q is not a Discord address: %w", to.Key(), platform.ErrPermanent)
	}
	return ch, nil
}

func isSnowflake(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

func noMentionsPtr() *discord.AllowedMentions {
	m := noMentions()
	return &m
}

// call makes one REST call within RequestTimeout and classifies a failure.
func (a *Adapter) call(ctx context.Context, route string, ep *rest.CompiledEndpoint, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if err := a.rest.Do(ep, body, out, rest.WithCtx(ctx)); err != nil {
		return classify(route, err)
	}
	return nil
}

// apiError is a REST error answer.
type apiError struct {
	Route   string
	Status  int
	Code    int    // Discord's JSON error code; 0 for none
	Message string // Discord's message, or the HTTP status text
	Global  bool   // a 429 of the global limit rather than the route's
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%s: %d %s", e.Route, e.Status, e.Message)
	if e.Code != 0 {
		s += fmt.Sprintf(" (code %d)", e.Code)
	}
	if e.Global {
		s += " (global rate limit)"
	}
	return s
}

// classify turns a REST failure into an *apiError with its class: a 429 —
// of the route or the global limit — asks for its retry_after, a 401 is
// refused credentials; the rest is left to the caller. An answer that is
// not Discord's JSON (a proxy's HTML page) is named by its status, never
// quoted.
func classify(route string, err error) error {
	var re *rest.Error
	if !errors.As(err, &re) || re.Response == nil {
		return fmt.Errorf("%s: %w", route, err)
	}
	e := &apiError{Route: route, Status: re.Response.StatusCode, Code: int(re.Code), Message: re.Message}
	var body struct {
		Message    *string  `json:"message"`
		RetryAfter *float64 `json:"retry_after"`
		Global     bool     `json:"global"`
	}
	isJSON := json.Unmarshal(re.RsBody, &body) == nil && body.Message != nil
	if !isJSON {
		e.Code, e.Message = 0, http.StatusText(e.Status)+" (not a Discord API answer)"
	}
	switch e.Status {
	case http.StatusTooManyRequests:
		e.Global = body.Global || strings.EqualFold(re.Response.Header.Get("X-RateLimit-Global"), "true")
		var wait time.Duration
		if body.RetryAfter != nil {
			wait = time.Duration(*body.RetryAfter * float64(time.Second))
		} else if s, err := strconv.ParseFloat(re.Response.Header.Get("Retry-After"), 64); err == nil {
			wait = time.Duration(s * float64(time.Second))
		}
		if wait <= 0 {
			wait = time.Second
		}
		return platform.RetryAfter(wait, e)
	case http.StatusUnauthorized:
		return platform.Refused(e)
	}
	return e
}

// status is the HTTP status of a classified REST failure, 0 for none.
func status(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// unknownRoute reports a 404 for the endpoint itself (Discord's "404: Not
// Found", code 0), as opposed to an unknown channel or message.
func unknownRoute(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Code == codeUnknownRoute
}

// final marks a refusal Discord will repeat — any 4xx but a 429 (whose
// wait is kept) — as permanent; the rest stays as classified.
func final(err error) error {
	if c, _ := platform.Classify(err); c != platform.ClassTransient {
		return err
	}
	if s := status(err); s >= 400 && s < 500 && s != http.StatusTooManyRequests && s != http.StatusRequestTimeout {
		return platform.Permanent(err)
	}
	return err
}

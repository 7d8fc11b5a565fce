package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
)

// Run checks the token with getMe, says Live, and long-polls getUpdates,
// handing each message with text or files to r, until ctx ends. The offset that
// acknowledges an update to Telegram is only sent after r stored it, so a
// crash re-reads rather than loses, and an update or message seen before
// is not handed over again. Any failure ends Run with the reason (a
// refused token marked platform.Refused); the gateway restarts it, and the
// offset reached is kept across restarts.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	if err := a.identify(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	r.Live()
	for ctx.Err() == nil {
		raws, err := a.getUpdates(ctx, a.offset())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return conflictAdvice(err)
		}
		for _, raw := range raws {
			id, ev, ok, err := decodeUpdate(raw, a.Username(), a.opener)
			if err != nil {
				a.log.Warn("telegram: undecodable update skipped", "update_id", id, "err", err)
			}
			key := strconv.FormatInt(id, 10)
			if ok && !a.seenUpdate.Has(key) && !a.seenMsg.Has(ev.ID) {
				if err := r.Receive(ctx, ev); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					// Not stored: the offset stays before this update, so
					// Telegram hands it out again after the restart.
					return fmt.Errorf("telegram: store update %d: %w", id, err)
				}
				a.seenMsg.Add(ev.ID)
			}
			a.seenUpdate.Add(key)
			a.advance(id)
		}
	}
	return nil
}

// conflictAdvice says what to do about a 409 Conflict from getUpdates:
// Telegram hands a bot's updates to one reader, so either another program
// polls with the same token (each poll ends the other's, and the messages
// are split between them) or a webhook is set. Other errors pass as they
// are. Either way Run ends and is restarted with backoff, so baton takes
// over once the other reader stops.
func conflictAdvice(err error) error {
	var ae *apiError
	if !errors.As(err, &ae) || ae.Code != http.StatusConflict {
		return err
	}
	if strings.Contains(strings.ToLower(ae.Description), "webhook") {
		return fmt.Errorf("telegram: a webhook is set for this bot, and baton reads updates by polling: delete the webhook (the Bot API's deleteWebhook) or give baton a bot of its own: %w", err)
	}
	return fmt.Errorf("telegram: another program is reading this bot's updates (a second baton gateway with the same token?): stop it or give each its own bot; messages are split between the two until then: %w", err)
}

// offset is the next update id to ask for.
func (a *Adapter) offset() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.next
}

// advance moves the offset past update id.
func (a *Adapter) advance(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id >= a.next {
		a.next = id + 1
	}
}

// identify asks getMe who the bot is (to recognise "/cmd@thisbot"), which
// also checks the token.
func (a *Adapter) identify(ctx context.Context) error {
	var me struct {
		Username string `json:"username"`
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if err := a.rawCall(ctx, "getMe", nil, &me); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
			return platform.Refused(fmt.Errorf("Telegram refused the bot token (%d %s)", ae.Code, ae.Description))
		}
		return fmt.Errorf("telegram: %w", err)
	}
	a.mu.Lock()
	a.username = me.Username
	a.mu.Unlock()
	return nil
}

// Probe asks getMe whether the Bot API answers again: the supervisor of
// a platform that is down restarts it as soon as it does.
func (a *Adapter) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if err := a.rawCall(ctx, "getMe", nil, nil); err != nil {
		return fmt.Errorf("telegram: probe: %w", err)
	}
	return nil
}

// apiError is a Bot API error answer.
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%s: %d %s", e.Method, e.Code, e.Description)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %ds)", e.RetryAfter)
	}
	return s
}

// getUpdates is driven here rather than by the library, whose poller
// advances the offset before the handler has run.
func (a *Adapter) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.PollTimeout+15*time.Second)
	defer cancel()
	var out []json.RawMessage
	err := a.rawCall(ctx, "getUpdates", map[string]any{
		"offset":          offset,
		"timeout":         int(a.cfg.PollTimeout / time.Second),
		"allowed_updates": []string{"message"},
	}, &out)
	return out, err
}

// rawCall calls a Bot API method with a JSON body (Telegram takes JSON as
// well as forms) and decodes its result into out. A failure is an
// *apiError (classified RetryAfter when Telegram asks to wait) or the
// transport's error with the token redacted.
func (a *Adapter) rawCall(ctx context.Context, method string, params map[string]any, out any) error {
	if params == nil {
		params = map[string]any{}
	}
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", method, err)
	}
	return a.rawPost(ctx, method, "application/json", bytes.NewReader(body), out)
}

// rawPost posts body (of contentType) to a Bot API method and decodes
// the answer as rawCall does.
func (a *Adapter) rawPost(ctx context.Context, method, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.ServerURL+"/bot"+a.cfg.Token+"/"+method, body)
	if err != nil {
		return fmt.Errorf("%s: %w", method, a.redact(err))
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, a.redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: read: %w", method, err)
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		// A proxy's HTML error page, say: its status is what it means.
		return &apiError{Method: method, Code: resp.StatusCode, Description: http.StatusText(resp.StatusCode) + " (not a Bot API answer)"}
	}
	if !r.OK {
		code := r.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		ae := &apiError{Method: method, Code: code, Description: r.Description, RetryAfter: r.Parameters.RetryAfter}
		if ae.RetryAfter > 0 {
			return platform.RetryAfter(time.Duration(ae.RetryAfter)*time.Second, ae)
		}
		return ae
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	return nil
}

// redact keeps the token, which is part of every request URL, out of
// errors that quote the URL.
func (a *Adapter) redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, a.cfg.Token, "TOKEN") // not <token>: a one-line reason strips tags
	}
	return err
}

// The parts of an update baton reads. Decoding into these rather than the
// library's full models keeps odd fields from failing a whole update.
type wireUpdate struct {
	UpdateID int64        `json:"update_id"`
	Message  *wireMessage `json:"message"`
}

type wireMessage struct {
	MessageID      int64 `json:"message_id"`
	ThreadID       int64 `json:"message_thread_id"`
	IsTopicMessage bool  `json:"is_topic_message"`
	Date           int64 `json:"date"`
	Chat           struct {
		ID      int64  `json:"id"`
		Type    string `json:"type"`
		IsForum bool   `json:"is_forum"`
	} `json:"chat"`
	From *struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Username  string `json:"username"`
	} `json:"from"`
	Text      string     `json:"text"`
	Caption   string     `json:"caption"`
	Photo     []wireFile `json:"photo"` // the sizes Telegram made of one photo
	Document  *wireFile  `json:"document"`
	Voice     *wireFile  `json:"voice"`
	VideoNote *wireFile  `json:"video_note"`
	Audio     *wireFile  `json:"audio"`
	Video     *wireFile  `json:"video"`
}

// decodeUpdate turns one update into an event: its text (or a file's
// caption) and its files, opened with open. ok is false for updates baton
// does not act on (neither text nor a file, from a bot, a channel post, a
// command addressed to another bot); the update id is still returned so
// the offset can move past it. botName is this bot's username, "" if
// unknown.
func decodeUpdate(raw []byte, botName string, open opener) (id int64, ev platform.Event, ok bool, err error) {
	var u wireUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		// Salvage the id so a malformed update cannot block the offset.
		var idOnly struct {
			UpdateID int64 `json:"update_id"`
		}
		_ = json.Unmarshal(raw, &idOnly)
		return idOnly.UpdateID, platform.Event{}, false, fmt.Errorf("decode update: %w", err)
	}
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot {
		return u.UpdateID, platform.Event{}, false, nil
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	files := attachments(m, open)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return u.UpdateID, platform.Event{}, false, nil
	}
	text, forUs := stripBotName(text, botName)
	if !forUs {
		return u.UpdateID, platform.Event{}, false, nil
	}
	at, ok := addressOf(m)
	if !ok {
		return u.UpdateID, platform.Event{}, false, nil
	}
	name := strings.TrimSpace(m.From.FirstName + " " + m.From.LastName)
	if name == "" {
		name = m.From.Username
	}
	return u.UpdateID, platform.Event{
		At:       at,
		SenderID: strconv.FormatInt(m.From.ID, 10),
		Sender:   name,
		Text:     text,
		ID:       strconv.FormatInt(m.Chat.ID, 10) + ":" + strconv.FormatInt(m.MessageID, 10),
		Time:     time.Unix(m.Date, 0).UTC(),

		Attachments: files,
	}, true, nil
}

// addressOf maps a message to where it was said; see the package comment.
func addressOf(m *wireMessage) (platform.Address, bool) {
	a := platform.Address{Platform: Name, Chat: strconv.FormatInt(m.Chat.ID, 10)}
	topic := ""
	if m.IsTopicMessage && m.ThreadID != 0 {
		topic = strconv.FormatInt(m.ThreadID, 10)
	}
	switch m.Chat.Type {
	case "private":
		a.Kind, a.Thread = platform.DM, topic
	case "group":
		a.Kind = platform.Group
	case "supergroup":
		a.Kind = platform.Group
		if topic != "" {
			a.Kind, a.Thread = platform.Thread, topic
		}
	default: // channels, and whatever Telegram adds next
		return platform.Address{}, false
	}
	return a, true
}

// stripBotName rewrites "/cmd@thisbot args" to "/cmd args". forUs is false
// for a command addressed to another bot ("/cmd@otherbot"), which groups
// without privacy mode deliver to every bot.
func stripBotName(text, botName string) (out string, forUs bool) {
	if !strings.HasPrefix(text, "/") {
		return text, true
	}
	end := strings.IndexFunc(text, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' })
	if end < 0 {
		end = len(text)
	}
	cmd := text[:end]
	at := strings.IndexByte(cmd, '@')
	if at < 0 {
		return text, true
	}
	if botName != "" && !strings.EqualFold(cmd[at+1:], botName) {
		return text, false
	}
	return cmd[:at] + text[end:], true
}

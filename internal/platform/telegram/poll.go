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

// seenLimit bounds the dedupe memory of one Run; older ids are forgotten
// (the gateway's store dedupes by Event.ID as well).
const seenLimit = 4096

// Run long-polls getUpdates and hands each text message to h until ctx
// ends. The offset that acknowledges an update to Telegram is only sent
// after h returned nil for it, so a crash re-reads rather than loses; an
// update or message seen before is not handed over again. When h fails,
// the same update is retried after a backoff, never skipped. Run returns
// an error only when the token is refused.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	if err := a.identify(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.readyOnce.Do(func() { close(a.ready) })
	var (
		offset     int64
		seenUpdate = newSeen(seenLimit)
		seenMsg    = newSeen(seenLimit)
		pollWait   time.Duration
		handleWait time.Duration
	)
	for ctx.Err() == nil {
		raws, err := a.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ae *apiError
			if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
				return fmt.Errorf("telegram: getUpdates: the bot token was refused: %w", err)
			}
			pollWait = a.nextBackoff(pollWait)
			if errors.As(err, &ae) && ae.RetryAfter > 0 {
				pollWait = time.Duration(ae.RetryAfter) * time.Second
			}
			a.log.Warn("telegram: getUpdates failed; retrying", "err", err, "in", pollWait)
			if !sleep(ctx, pollWait) {
				return nil
			}
			continue
		}
		pollWait = 0
	batch:
		for _, raw := range raws {
			id, ev, ok, err := decodeUpdate(raw, a.Username())
			if err != nil {
				a.log.Warn("telegram: undecodable update skipped", "update_id", id, "err", err)
			}
			key := strconv.FormatInt(id, 10)
			if ok && !seenUpdate.has(key) && !seenMsg.has(ev.ID) {
				if err := h(ctx, ev); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					// Not stored: leave the offset before this update so
					// Telegram hands it out again, and try later.
					handleWait = a.nextBackoff(handleWait)
					a.log.Warn("telegram: handler failed; the update will be retried",
						"update_id", id, "event", ev.ID, "err", err, "in", handleWait)
					if !sleep(ctx, handleWait) {
						return nil
					}
					break batch
				}
				handleWait = 0
				seenMsg.add(ev.ID)
			}
			seenUpdate.add(key)
			if id >= offset {
				offset = id + 1
			}
		}
	}
	return nil
}

// identify asks getMe who the bot is (to recognise "/cmd@thisbot") and
// checks the token, retrying transient failures.
func (a *Adapter) identify(ctx context.Context) error {
	var name string
	err := a.do(ctx, "getMe", func(ctx context.Context) error {
		me, err := a.api.GetMe(ctx)
		if err == nil {
			name = me.Username
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("telegram: getMe: %w", err)
	}
	a.mu.Lock()
	a.username = name
	a.mu.Unlock()
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
	body, err := json.Marshal(map[string]any{
		"offset":          offset,
		"timeout":         int(a.cfg.PollTimeout / time.Second),
		"allowed_updates": []string{"message"},
	})
	if err != nil {
		return nil, fmt.Errorf("getUpdates: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.ServerURL+"/bot"+a.cfg.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", a.redact(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", a.redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: read: %w", err)
	}
	var r struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		// A proxy's HTML error page, say.
		return nil, &apiError{Method: "getUpdates", Code: resp.StatusCode, Description: "undecodable answer"}
	}
	if !r.OK {
		code := r.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, &apiError{Method: "getUpdates", Code: code, Description: r.Description, RetryAfter: r.Parameters.RetryAfter}
	}
	return r.Result, nil
}

// redact keeps the token, which is part of every request URL, out of
// errors that quote the URL.
func (a *Adapter) redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, a.cfg.Token, "<token>")
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
	Text    string `json:"text"`
	Caption string `json:"caption"`
}

// decodeUpdate turns one update into an event. ok is false for updates
// baton does not act on (no text, from a bot, a channel post, a command
// addressed to another bot); the update id is still returned so the
// offset can move past it. botName is this bot's username, "" if unknown.
func decodeUpdate(raw []byte, botName string) (id int64, ev platform.Event, ok bool, err error) {
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
	if strings.TrimSpace(text) == "" {
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

// seen is a bounded set of recently handled ids.
type seen struct {
	set   map[string]struct{}
	order []string
	limit int
}

func newSeen(limit int) *seen { return &seen{set: map[string]struct{}{}, limit: limit} }

func (s *seen) has(k string) bool { _, ok := s.set[k]; return ok }

func (s *seen) add(k string) {
	if s.has(k) {
		return
	}
	s.set[k] = struct{}{}
	s.order = append(s.order, k)
	if len(s.order) > s.limit {
		delete(s.set, s.order[0])
		s.order = s.order[1:]
	}
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// nextBackoff doubles prev within [RetryBase, RetryMax].
func (a *Adapter) nextBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return a.cfg.RetryBase
	}
	return min(prev*2, a.cfg.RetryMax)
}

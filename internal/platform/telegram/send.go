package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/baton-agent/baton/internal/platform"
)

// Send posts markdown text to an address as Telegram HTML and returns the
// id of the (first) message posted. Text longer than MaxMessageLen is
// split first (the gateway normally has done it already). When Telegram
// refuses the HTML ("can't parse entities") the part is sent again as
// plain text. Rate limits (429 retry_after), server and network errors are
// retried within Config.MaxAttempts; an error Telegram says a retry cannot
// fix (chat not found, bot blocked, bad request) wraps platform.ErrPermanent.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	chat, thread, err := target(to)
	if err != nil {
		return "", err
	}
	var first string
	for _, part := range platform.Split(text, MaxMessageLen, platform.UTF16Len) {
		if strings.TrimSpace(part) == "" {
			continue // Telegram refuses empty messages
		}
		id, err := a.sendPart(ctx, chat, thread, part)
		if err != nil {
			return first, a.deliveryErr("send to "+to.Key(), err)
		}
		if first == "" {
			first = id
		}
	}
	if first == "" {
		return "", fmt.Errorf("telegram: send: empty message: %w", platform.ErrPermanent)
	}
	return first, nil
}

func (a *Adapter) sendPart(ctx context.Context, chat string, thread int, md string) (string, error) {
	send := func(text string, mode models.ParseMode) (string, error) {
		var msg *models.Message
		err := a.do(ctx, "sendMessage", func(ctx context.Context) error {
			m, err := a.api.SendMessage(ctx, &bot.SendMessageParams{
				ChatID: chat, MessageThreadID: thread, Text: text, ParseMode: mode,
			})
			msg = m
			return err
		})
		if err != nil {
			return "", err
		}
		return strconv.Itoa(msg.ID), nil
	}
	if h, ok := htmlFor(md); ok {
		id, err := send(h, models.ParseModeHTML)
		if err == nil || !entitiesRefused(err) {
			return id, err
		}
		a.log.Info("telegram: HTML refused; sending plain text", "err", err)
	}
	return send(md, "")
}

// htmlFor renders md, or reports false when the HTML would not do: empty
// once rendered (Telegram refuses an empty message), or longer than the
// limit once displayed.
func htmlFor(md string) (string, bool) {
	h := renderHTML(md)
	vis := visible(h)
	if strings.TrimSpace(vis) == "" || platform.UTF16Len(vis) > MaxMessageLen {
		return "", false
	}
	return h, true
}

var tagPattern = regexp.MustCompile(`<[^>]*>`)

// visible is what Telegram displays for our HTML: tags dropped, entities
// decoded. It is what the length limit counts.
func visible(h string) string {
	return html.UnescapeString(tagPattern.ReplaceAllString(h, ""))
}

func entitiesRefused(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "can't parse entities")
}

// Edit replaces a message's text (editMessageText). An edit cannot be
// split, so text beyond the limit is cut at a good boundary. Telegram's
// "message is not modified" counts as success.
func (a *Adapter) Edit(ctx context.Context, at platform.Address, msgID, text string) error {
	chat, _, err := target(at)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(msgID)
	if err != nil {
		return fmt.Errorf("telegram: edit %q in %s: bad message id: %w", msgID, at.Key(), platform.ErrPermanent)
	}
	if parts := platform.Split(text, MaxMessageLen, platform.UTF16Len); len(parts) > 1 {
		text = parts[0]
	}
	edit := func(t string, mode models.ParseMode) error {
		return a.do(ctx, "editMessageText", func(ctx context.Context) error {
			_, err := a.api.EditMessageText(ctx, &bot.EditMessageTextParams{
				ChatID: chat, MessageID: id, Text: t, ParseMode: mode,
			})
			return err
		})
	}
	if h, ok := htmlFor(text); ok {
		err = edit(h, models.ParseModeHTML)
		if err != nil && entitiesRefused(err) {
			err = edit(text, "")
		}
	} else {
		err = edit(text, "")
	}
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "message is not modified"):
		return nil
	case errors.Is(err, platform.ErrUnsupported):
		a.refused.Log(a.log, "editMessageText", err)
	}
	return fmt.Errorf("telegram: edit in %s: %w", at.Key(), err)
}

// Typing shows "typing…" for about five seconds (sendChatAction). It is
// tried once: a late typing indicator is worthless.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	chat, thread, err := target(at)
	if err != nil {
		return err
	}
	err = a.do(ctx, "sendChatAction", func(ctx context.Context) error {
		_, err := a.api.SendChatAction(ctx, &bot.SendChatActionParams{
			ChatID: chat, MessageThreadID: thread, Action: models.ChatActionTyping,
		})
		return err
	})
	if err == nil {
		return nil
	}
	if errors.Is(err, platform.ErrUnsupported) {
		a.refused.Log(a.log, "sendChatAction", err)
	}
	return fmt.Errorf("telegram: typing in %s: %w", at.Key(), err)
}

// NewThread opens a forum topic named after title in the chat holding
// home: a forum supergroup, or a private chat with topics enabled. It
// returns the topic's address — Kind Thread in a supergroup, Kind DM with
// Thread set in a private chat — exactly as messages in it will carry.
// Where topics are refused the error wraps platform.ErrUnsupported and
// the caller uses home itself: refused in this chat (not a forum, no
// right to manage topics), or, also wrapping platform.ErrNotOffered, by a
// server without the method.
func (a *Adapter) NewThread(ctx context.Context, home platform.Address, title string) (platform.Address, error) {
	home = home.Home()
	chat, _, err := target(home)
	if err != nil {
		return platform.Address{}, err
	}
	var topic *models.ForumTopic
	err = a.do(ctx, "createForumTopic", func(ctx context.Context) error {
		t, err := a.api.CreateForumTopic(ctx, &bot.CreateForumTopicParams{ChatID: chat, Name: topicName(title)})
		topic = t
		return err
	})
	if err == nil && (topic == nil || topic.MessageThreadID == 0) {
		err = platform.Unsupported(errors.New("createForumTopic: answer without message_thread_id"))
	}
	if err != nil {
		if errors.Is(err, bot.ErrorForbidden) && !errors.Is(err, platform.ErrUnsupported) {
			// No right to manage topics in this chat: its home it is.
			err = platform.Unsupported(err)
		}
		if errors.Is(err, platform.ErrUnsupported) {
			a.refused.Log(a.log, "createForumTopic", err)
		}
		return platform.Address{}, fmt.Errorf("telegram: new topic in %s: %w", home.Key(), err)
	}
	addr := platform.Address{Platform: Name, Kind: platform.Thread, Chat: home.Chat, Thread: strconv.Itoa(topic.MessageThreadID)}
	if home.Kind == platform.DM {
		addr.Kind = platform.DM
	}
	return addr, nil
}

// topicName fits a session title to Telegram's 1–128 character topic name.
func topicName(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return "baton"
	}
	if platform.UTF16Len(title) <= maxTopicName {
		return title
	}
	var b strings.Builder
	n := 0
	for _, r := range title {
		w := platform.UTF16Len(string(r))
		if n+w > maxTopicName-1 {
			break
		}
		b.WriteRune(r)
		n += w
	}
	return strings.TrimSpace(b.String()) + "…"
}

var commandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// SetCommands publishes the command menu (setMyCommands). Names Telegram
// would refuse (not 1–32 of a-z, 0-9, _) are left out; descriptions are
// cut to 256 characters; at most 100 commands are sent.
func (a *Adapter) SetCommands(ctx context.Context, cmds []platform.Command) error {
	var list []models.BotCommand
	have := map[string]bool{}
	for _, c := range cmds {
		name := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(c.Name), "/"))
		if !commandName.MatchString(name) || have[name] {
			continue
		}
		have[name] = true
		desc := strings.Join(strings.Fields(c.Description), " ")
		if desc == "" {
			desc = name
		}
		if r := []rune(desc); len(r) > 256 {
			desc = string(r[:255]) + "…"
		}
		list = append(list, models.BotCommand{Command: name, Description: desc})
		if len(list) == 100 {
			break
		}
	}
	err := a.do(ctx, "setMyCommands", func(ctx context.Context) error {
		_, err := a.api.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: list})
		return err
	})
	if err == nil {
		return nil
	}
	if errors.Is(err, platform.ErrUnsupported) {
		a.refused.Log(a.log, "setMyCommands", err)
	}
	return fmt.Errorf("telegram: set commands: %w", err)
}

// target reads a Telegram address.
func target(to platform.Address) (chat string, thread int, err error) {
	if to.Platform != Name || to.Chat == "" {
		return "", 0, fmt.Errorf("telegram: %q is not a Telegram address: %w", to.Key(), platform.ErrPermanent)
	}
	if to.Thread != "" {
		thread, err = strconv.Atoi(to.Thread)
		if err != nil {
			return "", 0, fmt.Errorf("telegram: %q has a bad topic id: %w", to.Key(), platform.ErrPermanent)
		}
	}
	return to.Chat, thread, nil
}

// do calls one API method once, within Config.RequestTimeout, and
// classifies a failure for the gateway, which alone decides on retries,
// by the HTTP status and the method, never by the wording: a 429 asks for
// its retry_after, a 401 refuses the token, an optional method the server
// lacks (404, 405, 501) is not offered anywhere, one refused in this chat
// (400) is unsupported here, and an error page from something in front of
// the Bot API is transient.
func (a *Adapter) do(ctx context.Context, method string, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	var ans answer
	err := call(answered(cctx, &ans))
	cancel()
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", method, err)
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tooMany):
		return platform.RetryAfter(max(time.Duration(tooMany.RetryAfter)*time.Second, time.Second), err)
	case errors.Is(err, bot.ErrorUnauthorized):
		return platform.Refused(err)
	case optional(method) && absent(ans.status):
		return platform.NotOffered(err)
	case optional(method) && ans.status == http.StatusBadRequest:
		// Refused in this chat (not a forum, no right to manage its
		// topics, a message that cannot be edited); another chat may
		// allow it.
		return platform.Unsupported(err)
	case ans.page:
		// The library's reading of the status (not found, bad request)
		// is about the page, not a Bot API verdict on the request.
		return pageError{err}
	}
	return err
}

// optional reports whether baton does without method where a server
// lacks it; sendMessage and the polling methods it cannot do without.
func optional(method string) bool {
	switch method {
	case "sendChatAction", "createForumTopic", "setMyCommands", "editMessageText":
		return true
	}
	return false
}

// absent reports whether an answer's HTTP status says the server has no
// such method (404, 405, 501): not here, not in any chat.
func absent(status int) bool {
	switch status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}

// pageError is a failure answered by a web server's error page rather
// than the Bot API: its text is kept, but not the library's classes, so
// it reads as transient (the server in front may be misrouted for now).
type pageError struct{ err error }

func (e pageError) Error() string { return e.err.Error() }

// final reports an answer that a retry will not change: Telegram has
// understood the request and refused it.
func final(err error) bool {
	var migrate *bot.MigrateError
	return errors.As(err, &migrate) ||
		errors.Is(err, bot.ErrorBadRequest) || errors.Is(err, bot.ErrorForbidden) ||
		errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) ||
		errors.Is(err, bot.ErrorConflict)
}

// deliveryErr wraps a send failure, marking it permanent when Telegram
// refused it for good.
func (a *Adapter) deliveryErr(what string, err error) error {
	err = fmt.Errorf("telegram: %s: %w", what, err)
	if final(err) {
		return platform.Permanent(err)
	}
	return err
}

// Link is the t.me address of a topic (or group) in a supergroup, which
// opens it for members of private and public groups alike; "" for a
// direct chat or a basic group, which have none.
func (a *Adapter) Link(at platform.Address) string {
	id, ok := strings.CutPrefix(at.Chat, "-100")
	if !ok || id == "" {
		return ""
	}
	if at.Thread != "" {
		return "https://t.me/c/" + id + "/" + at.Thread
	}
	return "https://t.me/c/" + id
}

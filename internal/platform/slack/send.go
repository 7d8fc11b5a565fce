package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/baton-agent/baton/internal/platform"
)

// typingStatus is what Slack shows under a thread while a turn runs.
const typingStatus = "is typing…"

// maxRootTitle bounds the session title shown in a handoff's root message.
const maxRootTitle = 150

// Send posts markdown text to an address as mrkdwn and returns the ts of
// the (first) message posted. In a thread every part carries thread_ts,
// so nothing leaks into the channel. Text longer than MaxMessageLen is
// split first (the gateway normally has done it already). Each part is
// tried once; failures are classified (see classify). Slack drops no
// repeated post, so a part of a stored delivery is remembered
// (Config.Memory) before it goes and carries its delivery token in its
// metadata: tried again — after a lost answer, or by baton restarted —
// it is looked for in the place and given back rather than posted twice.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	if err := check(to); err != nil {
		return "", err
	}
	var first string
	for i, part := range platform.Split(text, MaxMessageLen, a.MessageLen) {
		md := renderMrkdwn(part)
		if strings.TrimSpace(md) == "" {
			continue // Slack refuses empty messages (no_text)
		}
		ts, err := a.postOnce(ctx, to, i, md)
		if err != nil {
			return first, classify("send to "+to.Key(), err)
		}
		if first == "" {
			first = ts
		}
	}
	if first == "" {
		return "", fmt.Errorf("slack: send to %s: empty message: %w", to.Key(), platform.ErrPermanent)
	}
	return first, nil
}

// deliveryEvent is the metadata event type marking a message of a
// stored delivery; its payload's "token" says which.
const deliveryEvent = "baton_delivery"

// postOnce posts part i of what Send was given, once per stored delivery
// (see Send).
func (a *Adapter) postOnce(ctx context.Context, to platform.Address, i int, mrkdwn string) (string, error) {
	token, keyed := platform.DeliveryToken(ctx, to, i, tokenLen)
	if !keyed {
		return a.post(ctx, to.Chat, to.Thread, mrkdwn, nil)
	}
	_, before, err := a.wasTried(ctx, token)
	if err != nil {
		return "", err
	}
	if before {
		ts, err := a.postedAt(ctx, to, token)
		if err != nil || ts != "" {
			return ts, err
		}
	} else if err := a.remember(ctx, tried{Token: token}); err != nil {
		return "", err
	}
	return a.post(ctx, to.Chat, to.Thread, mrkdwn, &slack.SlackMetadata{
		EventType: deliveryEvent, EventPayload: map[string]any{"token": token}})
}

// maxLookPages bounds the pages of a place read looking for a message
// tried before: a thread is read from its start, a channel from its
// newest message.
const maxLookPages = 10

// postedAt is the ts of the message carrying token in its metadata at
// to, "" when there is none.
func (a *Adapter) postedAt(ctx context.Context, to platform.Address, token string) (string, error) {
	cursor := ""
	for range maxLookPages {
		cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		var page []slack.Message
		var next string
		var err error
		if to.Thread == "" {
			var resp *slack.GetConversationHistoryResponse
			resp, err = a.api.GetConversationHistoryContext(cctx, &slack.GetConversationHistoryParameters{
				ChannelID: to.Chat, Limit: 200, Cursor: cursor, IncludeAllMetadata: true})
			if err == nil {
				page, next = resp.Messages, resp.ResponseMetaData.NextCursor
				if !resp.HasMore {
					next = ""
				}
			}
		} else {
			var more bool
			page, more, next, err = a.api.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{
				ChannelID: to.Chat, Timestamp: to.Thread, Limit: 200, Cursor: cursor, IncludeAllMetadata: true})
			if !more {
				next = ""
			}
		}
		cancel()
		if err != nil {
			return "", err
		}
		for _, m := range page {
			if m.Metadata.EventType == deliveryEvent && m.Metadata.EventPayload["token"] == token {
				return m.Timestamp, nil
			}
		}
		if next == "" {
			return "", nil
		}
		cursor = next
	}
	return "", nil
}

// post is one chat.postMessage, with metadata when meta is set.
func (a *Adapter) post(ctx context.Context, channel, threadTS, mrkdwn string, meta *slack.SlackMetadata) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(mrkdwn, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if meta != nil {
		opts = append(opts, slack.MsgOptionMetadata(*meta))
	}
	_, ts, err := a.api.PostMessageContext(ctx, channel, opts...)
	return ts, err
}

// Edit replaces a message's text (chat.update). An edit cannot be split,
// so text beyond the limit is cut at a good boundary.
func (a *Adapter) Edit(ctx context.Context, at platform.Address, msgID, text string) error {
	if err := check(at); err != nil {
		return err
	}
	if msgID == "" {
		return fmt.Errorf("slack: edit in %s: no message ts: %w", at.Key(), platform.ErrPermanent)
	}
	if parts := platform.Split(text, MaxMessageLen, a.MessageLen); len(parts) > 1 {
		text = parts[0]
	}
	md := renderMrkdwn(text)
	if strings.TrimSpace(md) == "" {
		return fmt.Errorf("slack: edit in %s: empty message: %w", at.Key(), platform.ErrPermanent)
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	_, _, _, err := a.api.UpdateMessageContext(cctx, at.Chat, msgID, slack.MsgOptionText(md, false))
	if err != nil {
		return a.optional("chat.update", "edit in "+at.Key(), err)
	}
	return nil
}

// Typing shows "baton is typing…" under a thread while a turn runs
// (assistant.threads.setStatus, which bots may call with chat:write; Slack
// clears it when the reply is posted, or after two minutes). Slack has no
// indicator a bot may show outside a thread — Socket Mode cannot send
// typing events — so at the top level of a DM or channel nothing is
// shown and nil is returned.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	if err := check(at); err != nil {
		return err
	}
	if at.Thread == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	err := a.api.SetAssistantThreadsStatusContext(cctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: at.Chat, ThreadTS: at.Thread, Status: typingStatus,
	})
	if err != nil {
		return a.optional("assistant.threads.setStatus", "typing in "+at.Key(), err)
	}
	return nil
}

// NewThread posts a root message naming the session in the channel (or
// DM) holding home; the thread is that message's ts. It returns the
// thread's address — Kind Thread in a channel, Kind DM with Thread set in
// a DM — exactly as replies in it will carry. Where the root message is
// refused because threads are not available there (a non-threadable
// channel, a missing scope) the error wraps platform.ErrUnsupported and
// the caller uses home itself.
func (a *Adapter) NewThread(ctx context.Context, home platform.Address, title string) (platform.Address, error) {
	home = home.Home()
	if err := check(home); err != nil {
		return platform.Address{}, err
	}
	ts, err := a.post(ctx, home.Chat, "", rootText(title), nil)
	if err != nil {
		return platform.Address{}, a.optional("chat.postMessage", "new thread in "+home.Key(), err)
	}
	if ts == "" {
		return platform.Address{}, fmt.Errorf("slack: new thread in %s: chat.postMessage answered without ts", home.Key())
	}
	addr := platform.Address{Platform: Name, Kind: platform.Thread, Chat: home.Chat, Thread: ts}
	if home.Kind == platform.DM {
		addr.Kind = platform.DM
	}
	return addr, nil
}

// rootText is a handoff thread's root message: the session's title, bold.
func rootText(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		title = "baton"
	}
	if r := []rune(title); len(r) > maxRootTitle {
		title = strings.TrimSpace(string(r[:maxRootTitle-1])) + "…"
	}
	return "🧵 *" + escapeMrkdwn(title) + "* — continued here (reply in the thread)"
}

// check refuses an address that is not Slack's.
func check(to platform.Address) error {
	if to.Platform != Name || to.Chat == "" {
		return fmt.Errorf("slack: %q is not a Slack address: %w", to.Key(), platform.ErrPermanent)
	}
	return nil
}

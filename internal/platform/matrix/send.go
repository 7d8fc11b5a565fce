package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/baton-agent/baton/internal/platform"
)

// textContent is an m.room.message event's content as baton sends it.
type textContent struct {
	MsgType       string       `json:"msgtype"`
	Body          string       `json:"body"`
	Format        string       `json:"format,omitempty"`
	FormattedBody string       `json:"formatted_body,omitempty"`
	NewContent    *textContent `json:"m.new_content,omitempty"`
	RelatesTo     *relatesTo   `json:"m.relates_to,omitempty"`
	// Mentions is always present and empty: nothing baton posts (a
	// replayed transcript included) pings a person or the whole room.
	Mentions struct{} `json:"m.mentions"`
}

const htmlFormat = "org.matrix.custom.html"

// formatted is md as a message: the markdown as the plain body, and the
// HTML rendering when there is formatting to show.
func formatted(md string, plainOnly bool) textContent {
	c := textContent{MsgType: "m.text", Body: md}
	if h, ok := renderHTML(md); ok && !plainOnly {
		c.Format, c.FormattedBody = htmlFormat, h
	}
	return c
}

// encode is the content's JSON without Go's escaping of <, > and &,
// which would triple the size of HTML.
func encode(c any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// room is the room an address of this platform names.
func room(to platform.Address) (id.RoomID, error) {
	if to.Platform != Name || !strings.HasPrefix(to.Chat, "!") {
		return "", platform.Permanent(fmt.Errorf("matrix: %q is not a Matrix room address", to.Key()))
	}
	return id.RoomID(to.Chat), nil
}

// Send posts markdown text to a room, or into a thread (with an m.thread
// relation, and the newest event of the thread as the reply fallback for
// clients without threads). Text longer than MaxMessageLen is split first
// (the gateway normally has done it already); a part whose event would
// still be too large goes as plain text, or is split further. It returns
// the id of the first event posted. A try of a stored delivery posts no
// event twice (see txnID).
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	r, err := room(to)
	if err != nil {
		return "", err
	}
	var first string
	events := 0 // events posted so far; each has its own transaction id
	for _, part := range platform.Split(text, MaxMessageLen, a.MessageLen) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		ids, err := a.sendPart(ctx, r, to, part, &events)
		if first == "" && len(ids) > 0 {
			first = ids[0]
		}
		if err != nil {
			return first, fmt.Errorf("matrix: send to %s: %w", to.Key(), err)
		}
	}
	if first == "" {
		return "", platform.Permanent(fmt.Errorf("matrix: send to %s: empty message", to.Key()))
	}
	return first, nil
}

// sendPart posts one part, as HTML if the event fits, else as plain text,
// else in halves. events counts the events this Send posted, for their
// transaction ids.
func (a *Adapter) sendPart(ctx context.Context, r id.RoomID, to platform.Address, md string, events *int) ([]string, error) {
	var body []byte
	for _, plain := range []bool{false, true} {
		c := formatted(md, plain)
		c.RelatesTo = a.threadRelation(to)
		b, err := encode(c)
		if err != nil {
			return nil, platform.Permanent(fmt.Errorf("encode: %w", err))
		}
		if len(b) <= maxContentBytes {
			body = b
			break
		}
	}
	if body == nil {
		var ids []string
		for _, half := range platform.Split(md, max(len(md)/2, 1), a.MessageLen) {
			got, err := a.sendPart(ctx, r, to, half, events)
			ids = append(ids, got...)
			if err != nil {
				return ids, err
			}
		}
		return ids, nil
	}
	ev, err := a.sendEvent(ctx, r, a.txnID(ctx, to, *events), body)
	*events++
	if err != nil {
		return nil, failure("send", err, false)
	}
	if to.Thread != "" {
		a.remember(to.Key(), ev)
	}
	return []string{string(ev)}, nil
}

// threadRelation is the m.relates_to that puts a message in to's thread,
// nil outside threads.
func (a *Adapter) threadRelation(to platform.Address) *relatesTo {
	if to.Thread == "" {
		return nil
	}
	reply := a.newest(to.Key())
	if reply == "" {
		reply = id.EventID(to.Thread)
	}
	return &relatesTo{RelType: "m.thread", EventID: to.Thread, IsFallingBack: true, InReplyTo: &inReplyTo{EventID: string(reply)}}
}

// txnID is the transaction id of the event-th event of a Send. The
// homeserver answers a repeated PUT with the same transaction id (from the
// same access token) with the event it created the first time, so for a
// stored delivery it is derived from the delivery key: a try after a
// failure or a restart posts nothing twice. The split into events is the
// same on every try of one delivery, so the count names the same event.
// Without a key it is random.
func (a *Adapter) txnID(ctx context.Context, to platform.Address, event int) string {
	if tok, ok := platform.DeliveryToken(ctx, to, event, 32); ok {
		return "baton." + tok
	}
	return a.cli.TxnID()
}

// sendEvent puts one m.room.message event with an encoded content under a
// transaction id.
func (a *Adapter) sendEvent(ctx context.Context, r id.RoomID, txnID string, content []byte) (id.EventID, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	var resp mautrix.RespSendEvent
	_, err := a.cli.MakeFullRequest(ctx, mautrix.FullRequest{
		Method:       http.MethodPut,
		URL:          a.cli.BuildClientURL("v3", "rooms", r, "send", "m.room.message", txnID),
		Headers:      http.Header{"Content-Type": {"application/json"}},
		RequestBytes: content,
		ResponseJSON: &resp,
	})
	if err != nil {
		return "", err
	}
	if resp.EventID == "" {
		return "", fmt.Errorf("answer without event_id")
	}
	return resp.EventID, nil
}

// Edit replaces a message's text (an m.replace event). An edit cannot be
// split, so text that does not fit one event is cut at a good boundary.
func (a *Adapter) Edit(ctx context.Context, at platform.Address, msgID, text string) error {
	r, err := room(at)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(msgID, "$") {
		return platform.Permanent(fmt.Errorf("matrix: edit %q in %s: not an event id", msgID, at.Key()))
	}
	var body []byte
	for limit := MaxMessageLen; body == nil; limit /= 2 {
		if parts := platform.Split(text, limit, a.MessageLen); len(parts) > 1 {
			text = parts[0]
		}
		for _, plain := range []bool{false, true} {
			nc := formatted(text, plain)
			c := formatted("* "+text, plain)
			c.NewContent = &nc
			c.RelatesTo = &relatesTo{RelType: "m.replace", EventID: msgID}
			if body, err = encode(c); err != nil {
				return platform.Permanent(fmt.Errorf("matrix: edit in %s: encode: %w", at.Key(), err))
			}
			if len(body) <= maxContentBytes {
				break
			}
			body = nil
		}
	}
	if _, err := a.sendEvent(ctx, r, a.cli.TxnID(), body); err != nil {
		err = failure("edit", err, true)
		if cl, _ := platform.Classify(err); cl == platform.ClassUnsupported {
			a.refused.Log(a.log, "edit", err)
		}
		return fmt.Errorf("matrix: edit in %s: %w", at.Key(), err)
	}
	return nil
}

// Typing shows the bot typing in the room for a few seconds; the gateway
// renews it while a turn runs. Matrix shows typing per room, not per
// thread.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	r, err := room(at)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if _, err := a.cli.UserTyping(ctx, r, true, 6*time.Second); err != nil {
		err = failure("typing", err, true)
		if cl, _ := platform.Classify(err); cl == platform.ClassUnsupported {
			a.refused.Log(a.log, "typing", err)
		}
		return fmt.Errorf("matrix: typing in %s: %w", at.Key(), err)
	}
	return nil
}

// NewThread posts a root event naming the conversation in the home room
// and returns the thread it starts: the room and the root's event id,
// the address a person's reply in that thread arrives at. With a
// delivery key in ctx (platform.WithDeliveryKey) its transaction id is
// derived from it, so every try under that key posts one root.
func (a *Adapter) NewThread(ctx context.Context, home platform.Address, title string) (platform.Address, error) {
	home = home.Home()
	r, err := room(home)
	if err != nil {
		return platform.Address{}, err
	}
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		title = "baton"
	}
	c := textContent{MsgType: "m.text", Body: "🧵 " + title, Format: htmlFormat,
		FormattedBody: "🧵 <strong>" + html.EscapeString(title) + "</strong>"}
	body, err := encode(c)
	if err != nil {
		return platform.Address{}, platform.Permanent(fmt.Errorf("matrix: new thread in %s: encode: %w", home.Key(), err))
	}
	// Under the handoff's key, a try after a lost answer or a restart gets
	// the root made the first time.
	ev, err := a.sendEvent(ctx, r, a.txnID(ctx, home, 0), body)
	if err != nil {
		return platform.Address{}, fmt.Errorf("matrix: new thread in %s: %w", home.Key(), failure("send", err, false))
	}
	addr := platform.Address{Platform: Name, Kind: platform.Thread, Chat: string(r), Thread: string(ev)}
	a.remember(addr.Key(), ev)
	return addr, nil
}

package imessage

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
)

// maxWebhook bounds a webhook's body: a message with its chat and handle
// is a few kilobytes.
const maxWebhook = 1 << 20

// Run checks the server (password included), serves the webhook, and
// catches up with messages after the last one stored — at once and at
// every CheckEvery, which is also how it notices the server went away. It
// returns nil when ctx ends; on any failure, including a message Receive
// refused, it returns why, and the next Run asks the server for that
// message again.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	if err := a.call(ctx, http.MethodGet, "/api/v1/ping", nil, nil); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("imessage: reach the BlueBubbles server: %w", err)
	}
	ln, err := a.listener()
	if err != nil {
		return err
	}
	failed := make(chan error, 1)
	srv := &http.Server{Handler: a.webhook(r, failed), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // closes ln too
		a.mu.Lock()
		a.ln = nil
		a.mu.Unlock()
	}()

	a.startPoint(ctx)
	defer a.keepPoint(ctx)
	r.Live()
	tick := time.NewTicker(a.cfg.CheckEvery)
	defer tick.Stop()
	for {
		if err := a.catchUp(ctx, r); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		a.keepPoint(ctx)
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case err := <-served:
			return fmt.Errorf("imessage: webhook listener: %w", err)
		case <-tick.C:
		}
	}
}

// listener is the open webhook listener, or a new one on the same
// address after a Run closed it.
func (a *Adapter) listener() (net.Listener, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln != nil {
		return a.ln, nil
	}
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return nil, fmt.Errorf("imessage: webhook listener on %s: %w", a.addr, err)
	}
	a.ln = ln
	return ln, nil
}

// webhook takes BlueBubbles' POSTs. It refuses a request without the
// secret (401) or with a body it cannot read (400), ignores events other
// than new messages, and answers 503 when Receive refused the message —
// which also ends the Run, so the message is asked for again.
func (a *Adapter) webhook(r platform.Receiver, failed chan<- error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+WebhookPath, func(w http.ResponseWriter, req *http.Request) {
		got := req.URL.Query().Get("secret")
		if subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.WebhookSecret)) != 1 {
			a.log.Warn("imessage: refused a webhook without the secret", "remote", req.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxWebhook+1))
		if err != nil || len(body) > maxWebhook {
			http.Error(w, "body unreadable or too large", http.StatusBadRequest)
			return
		}
		var hook struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &hook); err != nil {
			a.log.Warn("imessage: malformed webhook", "err", err)
			http.Error(w, "malformed webhook: "+err.Error(), http.StatusBadRequest)
			return
		}
		if hook.Type != "new-message" {
			w.WriteHeader(http.StatusOK) // updated-message, typing-indicator, …: not baton's
			return
		}
		var m message
		if err := json.Unmarshal(hook.Data, &m); err != nil || m.GUID == "" {
			a.log.Warn("imessage: malformed new-message webhook", "err", err)
			http.Error(w, "malformed message", http.StatusBadRequest)
			return
		}
		if err := a.handOver(req.Context(), r, m); err != nil {
			select {
			case failed <- err:
			default:
			}
			http.Error(w, "not stored; it will be fetched again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return mux
}

// pointKey is where Config.Memory keeps the catch-up point.
const pointKey = "since"

// startPoint sets where the first catch-up of this process starts: where
// the last process left off (kept in Config.Memory), so that what people
// wrote while baton was down is fetched, or, the first time baton
// connects, now: history from before is not baton's to answer.
func (a *Adapter) startPoint(ctx context.Context) {
	a.mu.Lock()
	started := a.since != 0
	a.mu.Unlock()
	if started {
		return
	}
	var kept int64
	if a.cfg.Memory != nil {
		v, err := a.cfg.Memory.Get(ctx, pointKey)
		if err != nil {
			a.log.Warn("imessage: read where the last run left off; fetching from now", "err", err)
		}
		kept, _ = strconv.ParseInt(v, 10, 64)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.since == 0 {
		a.since = kept
		if a.since <= 0 {
			a.since = time.Now().UnixMilli()
		}
		a.kept = kept
	}
}

// keepPoint keeps the catch-up point in Config.Memory when it moved: the
// last message handed over, or before the earliest one refused, which
// the next run must fetch again.
func (a *Adapter) keepPoint(ctx context.Context) {
	if a.cfg.Memory == nil {
		return
	}
	a.mu.Lock()
	point := a.since
	if a.failed != 0 {
		point = min(point, a.failed-1)
	}
	moved := point != a.kept
	a.mu.Unlock()
	if !moved {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.RequestTimeout)
	defer cancel()
	if err := a.cfg.Memory.Set(ctx, pointKey, strconv.FormatInt(point, 10)); err != nil {
		a.log.Warn("imessage: keep where this run is", "err", err)
		return
	}
	a.mu.Lock()
	a.kept = point
	a.mu.Unlock()
}

// catchUp asks the server for the messages after the last one stored
// (or the earliest one refused) and hands over those not handed yet.
func (a *Adapter) catchUp(ctx context.Context, r platform.Receiver) error {
	// Dates are in milliseconds and the query's "after" is exclusive: ask
	// from the millisecond before, so a message sharing the last one's
	// millisecond is not passed over; those handed over already are known
	// by guid.
	a.mu.Lock()
	after := a.since - 1
	if a.failed != 0 {
		after = min(after, a.failed-1)
	}
	a.mu.Unlock()
	const page = 100
	for offset := 0; ; offset += page {
		var msgs []message
		q := map[string]any{"after": after, "sort": "ASC", "limit": page, "offset": offset, "with": []string{"chat", "handle", "attachment"}}
		if err := a.call(ctx, http.MethodPost, "/api/v1/message/query", q, &msgs); err != nil {
			return fmt.Errorf("imessage: fetch new messages: %w", err)
		}
		for _, m := range msgs {
			if err := a.handOver(ctx, r, m); err != nil {
				return err
			}
		}
		if len(msgs) < page {
			break
		}
	}
	return nil
}

// message is the part of a BlueBubbles message baton reads.
type message struct {
	GUID                  string           `json:"guid"`
	Text                  *string          `json:"text"`
	IsFromMe              bool             `json:"isFromMe"`
	DateCreated           int64            `json:"dateCreated"`
	AssociatedMessageGUID *string          `json:"associatedMessageGuid"`
	AssociatedMessageType json.RawMessage  `json:"associatedMessageType"`
	IsAudioMessage        bool             `json:"isAudioMessage"`
	Attachments           []wireAttachment `json:"attachments"`
	Handle                *struct {
		Address string `json:"address"`
	} `json:"handle"`
	Chats []struct {
		GUID string `json:"guid"`
	} `json:"chats"`
}

// handOver gives m to r unless it is not for baton or was handed over
// already; webhooks and catch-ups take turns, so a message is handed over
// once.
func (a *Adapter) handOver(ctx context.Context, r platform.Receiver, m message) error {
	a.handMu.Lock()
	defer a.handMu.Unlock()
	ev, ok := a.decode(m)
	a.mu.Lock()
	done := a.handed.Has(m.GUID)
	a.mu.Unlock()
	if ok && !done {
		if err := r.Receive(ctx, ev); err != nil {
			a.mu.Lock()
			if a.failed == 0 || m.DateCreated < a.failed {
				a.failed, a.failedGUID = m.DateCreated, m.GUID
			}
			a.mu.Unlock()
			return fmt.Errorf("imessage: store message %s: %w", m.GUID, err)
		}
	}
	a.mu.Lock()
	a.handed.Add(m.GUID)
	a.since = max(a.since, m.DateCreated)
	if m.GUID == a.failedGUID {
		a.failed, a.failedGUID = 0, ""
	}
	a.mu.Unlock()
	return nil
}

// decode makes an event of m; ok is false for what is not a person's
// message to baton: baton's own messages, tapbacks, messages with
// neither text nor a file.
func (a *Adapter) decode(m message) (platform.Event, bool) {
	tapback := (m.AssociatedMessageGUID != nil && *m.AssociatedMessageGUID != "") ||
		(len(m.AssociatedMessageType) > 0 && string(m.AssociatedMessageType) != "null")
	text := ""
	if m.Text != nil {
		// An attachment's place in the text is U+FFFC.
		text = strings.TrimSpace(strings.ReplaceAll(*m.Text, "\ufffc", ""))
	}
	if m.IsFromMe || tapback || m.Handle == nil || m.Handle.Address == "" || len(m.Chats) == 0 {
		return platform.Event{}, false
	}
	files := a.attachments(m)
	if text == "" && len(files) == 0 {
		return platform.Event{}, false
	}
	chat := m.Chats[0].GUID
	kind := platform.Group
	if strings.Contains(chat, ";-;") {
		kind = platform.DM
	}
	return platform.Event{
		At:          platform.Address{Platform: Name, Kind: kind, Chat: chat},
		SenderID:    m.Handle.Address,
		Sender:      m.Handle.Address,
		Text:        text,
		ID:          m.GUID,
		Time:        time.UnixMilli(m.DateCreated),
		Attachments: files,
	}, true
}

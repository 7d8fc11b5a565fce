package signal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
)

// maxEventLine bounds one line of the event stream; a message is at most a
// few kilobytes, and an envelope with attachments' metadata not much more.
const maxEventLine = 1 << 20

// Run reads the daemon's event stream and hands each message to r. It is
// live once the daemon answers the stream. The daemon sends an event
// once and keeps none to send again: run with
// --receive-mode=on-connection it takes messages from Signal's servers
// only while a stream is open, so what is written while baton is away
// waits there and comes on the next stream. An event Receive refused is
// kept here and handed over first when the supervisor runs Run again. It
// returns nil when ctx ends, and why otherwise.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.URL+"/api/v1/events", nil)
	if err != nil {
		return platform.Permanent(fmt.Errorf("signal: events: %w", err))
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("signal: connect to the daemon at %s: %w", a.cfg.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("signal: events: %w", httpError("events", resp, body))
	}
	r.Live()
	if ev := a.takePending(); ev != nil {
		if err := r.Receive(ctx, *ev); err != nil {
			a.keepPending(ev)
			return fmt.Errorf("signal: store message %s: %w", ev.ID, err)
		}
	}
	err = a.read(ctx, resp.Body, r)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// sse is one Server-Sent Event.
type sse struct {
	id, name, data string
}

// read dispatches the stream's events until it ends.
func (a *Adapter) read(ctx context.Context, body io.Reader, r platform.Receiver) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	var ev sse
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 || ev.id != "" {
				ev.data = strings.Join(data, "\n")
				if err := a.dispatch(ctx, ev, r); err != nil {
					return err
				}
			}
			ev, data = sse{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: the daemon's keep-alive
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("signal: event stream: %w", err)
	}
	return errors.New("signal: the daemon closed the event stream")
}

// dispatch hands one event's message to r; one r refused is kept to be
// handed over first by the next Run.
func (a *Adapter) dispatch(ctx context.Context, e sse, r platform.Receiver) error {
	if e.name == "" || e.name == "receive" {
		ev, ok, err := a.decode([]byte(e.data))
		if err != nil {
			// A payload baton cannot read is logged and passed over: it
			// would fail the same way every time it came again.
			a.log.Warn("signal: unreadable event skipped", "id", e.id, "err", err)
		} else if ok {
			if err := r.Receive(ctx, ev); err != nil {
				// The daemon will not send it again: keep it here.
				a.keepPending(&ev)
				return fmt.Errorf("signal: store message %s: %w", ev.ID, err)
			}
		}
	}
	return nil
}

func (a *Adapter) keepPending(ev *platform.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending = ev
}

func (a *Adapter) takePending() *platform.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	ev := a.pending
	a.pending = nil
	return ev
}

// envelope is the part of signal-cli's receive notification baton reads.
type envelope struct {
	Envelope struct {
		Source       string `json:"source"`
		SourceNumber string `json:"sourceNumber"`
		SourceUUID   string `json:"sourceUuid"`
		SourceName   string `json:"sourceName"`
		Timestamp    int64  `json:"timestamp"`
		DataMessage  *struct {
			Timestamp   int64            `json:"timestamp"`
			Message     *string          `json:"message"`
			Attachments []wireAttachment `json:"attachments"`
			GroupInfo   *struct {
				GroupID string `json:"groupId"`
			} `json:"groupInfo"`
		} `json:"dataMessage"`
		SyncMessage *struct {
			SentMessage *struct {
				Destination       string           `json:"destination"`
				DestinationNumber string           `json:"destinationNumber"`
				DestinationUUID   string           `json:"destinationUuid"`
				Timestamp         int64            `json:"timestamp"`
				Message           *string          `json:"message"`
				Attachments       []wireAttachment `json:"attachments"`
				GroupInfo         *struct {
					GroupID string `json:"groupId"`
				} `json:"groupInfo"`
			} `json:"sentMessage"`
		} `json:"syncMessage"`
	} `json:"envelope"`
	Account string `json:"account"`
}

// decode reads a receive notification. ok is false for what carries
// neither text nor a file for baton: receipts, typing, reactions, and the
// owner's messages to anyone but themselves.
func (a *Adapter) decode(data []byte) (ev platform.Event, ok bool, err error) {
	var n envelope
	if err := json.Unmarshal(data, &n); err != nil {
		return ev, false, fmt.Errorf("decode envelope: %w", err)
	}
	e := n.Envelope
	sender := firstOf(e.SourceNumber, e.Source, e.SourceUUID)
	switch {
	case e.DataMessage != nil:
		m := e.DataMessage
		if sender == "" {
			return ev, false, nil
		}
		at := platform.Address{Platform: Name, Kind: platform.DM, Chat: sender}
		chat := map[string]any{"recipient": sender}
		if m.GroupInfo != nil && m.GroupInfo.GroupID != "" {
			at = platform.Address{Platform: Name, Kind: platform.Group, Chat: m.GroupInfo.GroupID}
			chat = map[string]any{"groupId": m.GroupInfo.GroupID}
		}
		return a.event(at, sender, e.SourceName, m.Message, a.attachments(m.Attachments, chat), firstNonZero(m.Timestamp, e.Timestamp))
	case e.SyncMessage != nil && e.SyncMessage.SentMessage != nil:
		m := e.SyncMessage.SentMessage
		to := firstOf(m.DestinationNumber, m.Destination, m.DestinationUUID)
		if m.GroupInfo != nil || !a.isSelf(to) {
			return ev, false, nil
		}
		at := platform.Address{Platform: Name, Kind: platform.DM, Chat: a.cfg.Account}
		files := a.attachments(m.Attachments, map[string]any{"recipient": a.cfg.Account})
		return a.event(at, a.cfg.Account, e.SourceName, m.Message, files, firstNonZero(m.Timestamp, e.Timestamp))
	}
	return ev, false, nil
}

// event is a message's event; ok is false for one with neither text nor
// a file.
func (a *Adapter) event(at platform.Address, sender, name string, text *string, files []platform.Attachment, ts int64) (platform.Event, bool, error) {
	body := ""
	if text != nil && strings.TrimSpace(*text) != "" {
		body = *text
	}
	if body == "" && len(files) == 0 {
		return platform.Event{}, false, nil
	}
	return platform.Event{
		At: at, SenderID: sender, Sender: name, Text: body, Attachments: files,
		// A Signal message is named by its author and timestamp.
		ID:   sender + ":" + strconv.FormatInt(ts, 10),
		Time: time.UnixMilli(ts),
	}, true, nil
}

func (a *Adapter) isSelf(id string) bool { return id != "" && id == a.cfg.Account }

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstNonZero(v ...int64) int64 {
	for _, x := range v {
		if x != 0 {
			return x
		}
	}
	return 0
}

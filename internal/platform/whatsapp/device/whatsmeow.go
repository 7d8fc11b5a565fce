package device

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/store/sqlstore"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	waLog "go.mau.fi/whatsmeow/util/log"
	"google.golang.org/protobuf/proto"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

// The device (its keys and the Signal-protocol sessions whatsmeow keeps
// per contact) lives in baton's own database, in whatsmeow's tables
// (whatsmeow_*, versioned in whatsmeow_version, beside baton's
// schema_migrations): one file to back up, move or check with `baton
// doctor`. whatsmeow reaches it through a pool of its own with one
// connection that, like baton's writer, takes the write lock at BEGIN
// and waits for the other's transaction, so the two never deadlock.

// Device is the linked device kept in the store.
type Device struct {
	store     *store.Device
	container *sqlstore.Container
}

// OpenDevice opens the device kept in baton's SQLite store at path (the
// store must exist: baton creates and migrates it); Linked tells whether
// it was paired yet.
func OpenDevice(ctx context.Context, path string, log *slog.Logger) (*Device, error) {
	if path == "" {
		return nil, errors.New("whatsapp: the device is kept in baton's SQLite store, and the configured store is none")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("whatsapp: baton's store %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("mode", "rw") // never create: baton's store made the file
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("whatsapp: device in %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer: SQLite serialises writes anyway
	container := sqlstore.NewWithDB(db, "sqlite", waLogger(log, "store"))
	if err := container.Upgrade(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("whatsapp: device in %s: %w", path, err)
	}
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("whatsapp: device in %s: %w", path, err)
	}
	return &Device{store: dev, container: container}, nil
}

// Linked reports whether the device was paired with a phone.
func (d *Device) Linked() bool { return d.store.ID != nil }

// JID is the account's own JID once linked; "" before.
func (d *Device) JID() string {
	if d.store.ID == nil {
		return ""
	}
	return d.store.ID.ToNonAD().String()
}

// Close closes the store.
func (d *Device) Close() error { return d.container.Close() }

// Whatsmeow is the real Client, on a linked Device.
type Whatsmeow struct {
	cli *whatsmeow.Client
	log *slog.Logger
}

var _ whatsapp.Client = (*Whatsmeow)(nil)

// NewWhatsmeow makes the client of a linked device; it connects in Listen.
func NewWhatsmeow(d *Device, log *slog.Logger) *Whatsmeow {
	if log == nil {
		log = slog.Default()
	}
	cli := whatsmeow.NewClient(d.store, waLogger(log, "client"))
	// Acknowledge a message only once baton stored it: a handler that
	// fails leaves it for WhatsApp to deliver again, and keeping the
	// decrypted text lets that redelivery be read (Signal-protocol
	// ratchets move on at the first decryption).
	cli.SynchronousAck = true
	cli.EnableDecryptedEventBuffer = true
	// Reconnecting is the gateway supervisor's job: Listen returns.
	cli.EnableAutoReconnect = false
	return &Whatsmeow{cli: cli, log: log}
}

// Self is the account's own JID.
func (w *Whatsmeow) Self() string {
	if w.cli.Store.ID == nil {
		return ""
	}
	return w.cli.Store.ID.ToNonAD().String()
}

// Listen connects and hands messages to handle until ctx ends or the
// connection does.
func (w *Whatsmeow) Listen(ctx context.Context, connected func(), handle func(context.Context, whatsapp.Message) error) error {
	if w.cli.Store.ID == nil {
		return whatsapp.ErrLoggedOut
	}
	done := make(chan error, 1)
	var once sync.Once
	end := func(err error) { once.Do(func() { done <- err }) }
	var failed sync.Mutex // held while a failure stops later messages
	stopped := false
	id := w.cli.AddEventHandlerWithSuccessStatus(func(evt any) bool {
		switch e := evt.(type) {
		case *events.Connected:
			connected()
		case *events.Message:
			failed.Lock()
			defer failed.Unlock()
			if stopped {
				return false // after a failure nothing more is acknowledged: order is kept
			}
			m, ok := messageOf(e, w.self())
			if !ok {
				return true
			}
			if err := handle(ctx, m); err != nil {
				stopped = true
				end(err)
				return false
			}
		case *events.LoggedOut:
			end(whatsapp.ErrLoggedOut)
		case *events.StreamReplaced:
			end(errors.New("whatsapp: another connection took over this device"))
		case *events.TemporaryBan:
			end(&whatsapp.ServerError{Code: 403, Text: "temporarily banned: " + e.String()})
		case *events.ClientOutdated:
			end(&whatsapp.ServerError{Code: 405, Text: "this WhatsApp client version is outdated; update baton"})
		case *events.ConnectFailure:
			end(fmt.Errorf("whatsapp: connect failed: %d %s", e.Reason, e.Message))
		case *events.Disconnected:
			end(errors.New("whatsapp: disconnected"))
		}
		return true
	})
	defer w.cli.RemoveEventHandler(id)
	if err := w.cli.Connect(); err != nil {
		return fmt.Errorf("whatsapp: connect: %w", err)
	}
	defer w.cli.Disconnect()
	select {
	case <-ctx.Done():
		return nil
	case err := <-done:
		return err
	}
}

// self is the account's own JIDs: its phone-number JID with the device,
// and its hidden-user (LID) JID, which WhatsApp uses for the own chat too.
func (w *Whatsmeow) self() selfIDs {
	s := selfIDs{}
	if w.cli.Store.ID != nil {
		s.pn = *w.cli.Store.ID
	}
	s.lid = w.cli.Store.GetLID()
	return s
}

type selfIDs struct {
	pn  types.JID // with Device: this linked device
	lid types.JID
}

func (s selfIDs) is(j types.JID) bool {
	return (!s.pn.IsEmpty() && j.User == s.pn.User && j.Server == types.DefaultUserServer) ||
		(!s.lid.IsEmpty() && j.User == s.lid.User && j.Server == types.HiddenUserServer)
}

// messageOf maps a whatsmeow message to a Message; ok is false for what
// carries neither text nor a file (reactions, receipts, stickers), edits
// (their original was answered already), broadcasts and newsletters, and
// what this very device sent (baton's own replies).
func messageOf(e *events.Message, self selfIDs) (whatsapp.Message, bool) {
	info := e.Info
	if info.IsFromMe && !self.pn.IsEmpty() && info.Sender.Device == self.pn.Device && self.is(info.Sender) {
		return whatsapp.Message{}, false
	}
	if e.IsEdit || info.Chat.Server == types.BroadcastServer || info.Chat.Server == types.NewsletterServer {
		return whatsapp.Message{}, false
	}
	text := textOf(e.Message)
	files := mediaOf(e.Message)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return whatsapp.Message{}, false
	}
	chat := info.Chat.ToNonAD()
	if self.is(chat) {
		chat = self.pn.ToNonAD() // the own chat, by phone number or LID, is one chat
	}
	sender := info.Sender.ToNonAD()
	if sender.Server == types.HiddenUserServer && !info.SenderAlt.IsEmpty() {
		sender = info.SenderAlt.ToNonAD()
	}
	if info.IsFromMe && !self.pn.IsEmpty() {
		sender = self.pn.ToNonAD()
	}
	return whatsapp.Message{
		ID: info.ID, Chat: chat.String(), Sender: sender.String(), SenderName: info.PushName,
		FromMe: info.IsFromMe, Text: text, Time: info.Timestamp, Files: files,
	}, true
}

func textOf(m *waE2E.Message) string {
	switch {
	case m == nil:
		return ""
	case m.GetConversation() != "":
		return m.GetConversation()
	case m.GetExtendedTextMessage() != nil:
		return m.GetExtendedTextMessage().GetText()
	case m.GetImageMessage() != nil:
		return m.GetImageMessage().GetCaption()
	case m.GetDocumentMessage() != nil:
		return m.GetDocumentMessage().GetCaption()
	case m.GetVideoMessage() != nil:
		return m.GetVideoMessage().GetCaption()
	}
	return ""
}

// SendText sends a plain text message (WhatsApp reads its own *markers*)
// as the message with id, or one whatsmeow makes up for "".
func (w *Whatsmeow) SendText(ctx context.Context, chat, id, text string) (string, error) {
	to, err := types.ParseJID(chat)
	if err != nil || to.User == "" {
		return "", fmt.Errorf("%w: %q", whatsapp.ErrBadChat, chat)
	}
	resp, err := w.cli.SendMessage(ctx, to, &waE2E.Message{Conversation: proto.String(text)},
		whatsmeow.SendRequestExtra{ID: types.MessageID(id)})
	if err != nil {
		return "", sendError(err)
	}
	return resp.ID, nil
}

// Composing sends the "composing" chat presence.
func (w *Whatsmeow) Composing(ctx context.Context, chat string) error {
	to, err := types.ParseJID(chat)
	if err != nil || to.User == "" {
		return fmt.Errorf("%w: %q", whatsapp.ErrBadChat, chat)
	}
	if err := w.cli.SendChatPresence(ctx, to, types.ChatPresenceComposing, types.ChatPresenceMediaText); err != nil {
		return sendError(err)
	}
	return nil
}

// sendError turns whatsmeow's failures into the package's: server codes
// as ServerError, a missing device as whatsapp.ErrLoggedOut.
func sendError(err error) error {
	var iq *whatsmeow.IQError
	switch {
	case errors.Is(err, whatsmeow.ErrNotLoggedIn):
		return fmt.Errorf("%w: %v", whatsapp.ErrLoggedOut, err)
	case errors.As(err, &iq):
		return fmt.Errorf("%w: %w", &whatsapp.ServerError{Code: iq.Code, Text: iq.Text}, err)
	}
	return err
}

// waLogger passes whatsmeow's warnings and errors to slog; its chatty
// info and debug lines are dropped.
func waLogger(log *slog.Logger, module string) waLog.Logger {
	if log == nil {
		log = slog.Default()
	}
	return &slogLogger{log: log.With("module", "whatsmeow/"+module)}
}

type slogLogger struct{ log *slog.Logger }

func (l *slogLogger) Warnf(msg string, args ...any)  { l.log.Warn(fmt.Sprintf(msg, args...)) }
func (l *slogLogger) Errorf(msg string, args ...any) { l.log.Error(fmt.Sprintf(msg, args...)) }
func (l *slogLogger) Infof(string, ...any)           {}
func (l *slogLogger) Debugf(string, ...any)          {}
func (l *slogLogger) Sub(module string) waLog.Logger {
	return &slogLogger{log: l.log.With("sub", module)}
}

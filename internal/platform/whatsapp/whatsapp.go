// Package whatsapp connects baton to WhatsApp as a linked device of the
// owner's own account (go.mau.fi/whatsmeow), paired once with `baton
// whatsapp link`.
//
// The account is the owner's personal one: every chat on it is the owner's
// private conversation, except the owner's chat with themselves ("Message
// yourself") and, when configured, one home chat (a group the owner made
// for baton). Only what is said there reaches the gateway; nothing else is
// ever handed over. WhatsApp has no threads: a handoff lands in the home
// chat. Files come and go as WhatsApp's media messages, through the
// Client (Download, SendFile). Addresses: platform.DM with Chat = the
// chat's JID ("4915550000@s.whatsapp.net"), platform.Group for a group
// JID ("120363…@g.us").
//
// The adapter's logic sits behind Client, so that it is tested without
// WhatsApp's servers. The real Client is Process: it runs baton-whatsapp
// (cmd/baton-whatsapp, with package device on whatsmeow) as a child, so
// that whatsmeow is linked into no other baton program.
package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/styled"
)

// Name is the platform name in addresses and config.
const Name = "whatsapp"

// MaxMessageLen is the longest text sent as one message, in runes.
// WhatsApp takes up to 65,536 characters, but phones fold a long message
// behind "Read more" after a few thousand: shorter parts read better and
// each arrives (and can be answered) on its own.
const MaxMessageLen = 4000

// GroupServer is the JID server of WhatsApp groups.
const GroupServer = "g.us"

// LinkHint is what to do when the device is missing or was logged out.
const LinkHint = "run `baton whatsapp link` and scan the code with the phone (WhatsApp › Linked devices)"

// ErrLoggedOut is returned by a Client whose device was unlinked (from the
// phone, or by WhatsApp): nothing but linking again helps.
var ErrLoggedOut = errors.New("whatsapp: this device was logged out")

// ErrBadChat is returned by a Client for a chat id that is not a JID.
var ErrBadChat = errors.New("whatsapp: not a chat id")

// ServerError is a failure WhatsApp's servers answered with; Code is
// their HTTP-like status (400, 401, 403, 404, 429, 500…).
type ServerError struct {
	Code int
	Text string
	// Wait is how long the server asked to wait before the next try (a
	// 429); 0 when it did not say.
	Wait time.Duration
}

func (e *ServerError) Error() string { return fmt.Sprintf("server answered %d %s", e.Code, e.Text) }

// Message is a message as a Client hears it: text, files, or both.
type Message struct {
	ID         string    // WhatsApp's message id
	Chat       string    // the chat's JID, without a device: user@s.whatsapp.net or id@g.us
	Sender     string    // the author's JID, without a device
	SenderName string    // the author's push name
	FromMe     bool      // written on the account itself (any of the owner's devices)
	Text       string    // the text or caption
	Time       time.Time // when WhatsApp says it was sent
	Files      []Media   // the image, document, audio or video it carries
}

// Client is what the adapter needs of WhatsApp. device.Whatsmeow implements
// it with whatsmeow (in baton-whatsapp), Process through that program, and
// whatsapptest.Fake in memory.
type Client interface {
	// Self is the account's own JID (user@s.whatsapp.net); its chat with
	// itself is the default home.
	Self() string
	// Listen connects and calls handle with each message, in order, until
	// ctx ends (it returns nil) or the connection ends (it returns why;
	// ErrLoggedOut when the device was unlinked). connected is called
	// once the server accepted the device. A message handle returned an
	// error for is not acknowledged, so WhatsApp delivers it again on the
	// next connection; Listen then disconnects and returns that error.
	Listen(ctx context.Context, connected func(), handle func(context.Context, Message) error) error
	// SendText sends text to a chat once as the message with id ("": the
	// client makes one up) and returns the message's id. WhatsApp's
	// clients drop a message whose id they already have, so sending one
	// id again shows nothing new.
	SendText(ctx context.Context, chat, id, text string) (string, error)
	// Composing shows "typing…" in a chat.
	Composing(ctx context.Context, chat string) error
	// Download reads the bytes of a file a message carried, in one try.
	Download(ctx context.Context, f Media) (io.ReadCloser, error)
	// SendFile uploads body (f.Size bytes) and sends it to a chat once as
	// the message with id ("": the client makes one up), as SendText
	// does, and returns the message's id.
	SendFile(ctx context.Context, chat, id string, f Upload, body io.Reader) (string, error)
}

// Config configures the adapter.
type Config struct {
	// Client talks to WhatsApp; required.
	Client Client
	// Home is a chat JID besides the owner's own chat whose messages are
	// baton's (a group the owner made for it); "" for none.
	Home string
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
}

// Adapter is the WhatsApp platform adapter: platform.Adapter, Typer,
// Limiter, DownloadLimiter and FileSender.
type Adapter struct {
	client Client
	home   string
	log    *slog.Logger

	mu   sync.Mutex
	sent map[string]bool // ids of messages baton sent, should one come back
}

var (
	_ platform.Adapter = (*Adapter)(nil)
	_ platform.Typer   = (*Adapter)(nil)
	_ platform.Limiter = (*Adapter)(nil)
)

// New makes an adapter; it does not connect (Run does).
func New(cfg Config) (*Adapter, error) {
	if cfg.Client == nil {
		return nil, errors.New("whatsapp: no client")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Adapter{client: cfg.Client, home: strings.TrimSpace(cfg.Home), log: log.With("platform", Name), sent: map[string]bool{}}, nil
}

// Name is "whatsapp".
func (a *Adapter) Name() string { return Name }

// MaxMessageLen is 4000 runes.
func (a *Adapter) MaxMessageLen() int { return MaxMessageLen }

// MessageLen counts runes.
func (a *Adapter) MessageLen(s string) int { return utf8.RuneCountInString(s) }

// HomeAddress is the address of the owner's chat with themselves.
func HomeAddress(self string) platform.Address { return addressOf(self) }

func addressOf(chat string) platform.Address {
	if strings.HasSuffix(chat, "@"+GroupServer) {
		return platform.Address{Platform: Name, Kind: platform.Group, Chat: chat}
	}
	return platform.Address{Platform: Name, Kind: platform.DM, Chat: chat}
}

// marks are WhatsApp's own formatting markers.
var marks = styled.Marks{
	styled.Bold:      {"*", "*"},
	styled.Italic:    {"_", "_"},
	styled.Strike:    {"~", "~"},
	styled.Monospace: {"`", "`"},
	styled.Block:     {"```\n", "\n```"},
}

// Render turns markdown into WhatsApp's formatting (*bold*, _italic_,
// ~strike~, `code`, ```blocks```).
func Render(md string) string { return styled.Render(md, marks).Plain }

// Send posts markdown text as WhatsApp-formatted text, split at
// MaxMessageLen, and returns the id of the first message. The messages of
// a stored delivery take their ids from its key (see MessageID), so a try
// after a lost answer or a restart shows nothing twice.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	chat, err := a.chat(to)
	if err != nil {
		return "", err
	}
	var first string
	for i, part := range platform.Split(text, MaxMessageLen, a.MessageLen) {
		body := Render(part)
		if strings.TrimSpace(body) == "" {
			continue
		}
		id, err := a.client.SendText(ctx, chat, MessageID(ctx, to, i), body)
		if err != nil {
			return first, fmt.Errorf("whatsapp: send to %s: %w", to.Key(), classify(err, false))
		}
		a.remember(id)
		if first == "" {
			first = id
		}
	}
	if first == "" {
		return "", platform.Permanent(fmt.Errorf("whatsapp: send to %s: empty message", to.Key()))
	}
	return first, nil
}

// MessageID is the id of part i of the stored delivery ctx names
// (platform.WithDeliveryKey): the same on every try of it, in the form
// whatsmeow gives the ids it makes ("3EB0" and 18 upper-case hex digits);
// "" when ctx names none, for the client to make one up.
func MessageID(ctx context.Context, to platform.Address, i int) string {
	tok, ok := platform.DeliveryToken(ctx, to, i, 18)
	if !ok {
		return ""
	}
	return "3EB0" + strings.ToUpper(tok)
}

// Typing shows "typing…" (the "composing" presence) in the chat.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	chat, err := a.chat(at)
	if err != nil {
		return err
	}
	if err := a.client.Composing(ctx, chat); err != nil {
		return fmt.Errorf("whatsapp: typing in %s: %w", at.Key(), classify(err, false))
	}
	return nil
}

func (a *Adapter) chat(to platform.Address) (string, error) {
	if to.Platform != Name || !strings.Contains(to.Chat, "@") {
		return "", platform.Permanent(fmt.Errorf("whatsapp: %q is not a WhatsApp address", to.Key()))
	}
	if to.Thread != "" {
		return "", platform.Permanent(fmt.Errorf("whatsapp: %q: WhatsApp has no threads", to.Key()))
	}
	return to.Chat, nil
}

// Run listens until ctx ends (nil) or the connection ends (why, for the
// supervisor to reconnect by running it again). A logged-out device is
// refused: only linking again helps.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	err := a.client.Listen(ctx, r.Live, func(ctx context.Context, m Message) error {
		ev, ok := a.event(m)
		if !ok {
			return nil
		}
		if err := r.Receive(ctx, ev); err != nil {
			return fmt.Errorf("whatsapp: store message %s: %w", ev.ID, err)
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		return errors.New("whatsapp: the connection ended")
	}
	return classify(err, true)
}

// event is m as the gateway sees it, if it is baton's: said in the
// owner's chat with themselves, or in the configured home chat. Anything
// else on the owner's account is none of baton's business.
func (a *Adapter) event(m Message) (platform.Event, bool) {
	self := a.client.Self()
	mine := (m.Chat == self && m.FromMe) || (a.home != "" && m.Chat == a.home)
	if !mine || (strings.TrimSpace(m.Text) == "" && len(m.Files) == 0) || m.ID == "" || a.wasSent(m.ID) {
		return platform.Event{}, false
	}
	sender := m.Sender
	if m.FromMe {
		sender = self
	}
	return platform.Event{
		At: addressOf(m.Chat), SenderID: sender, Sender: m.SenderName, Text: m.Text,
		// WhatsApp ids are unique per sender; the chat makes them unique here.
		ID:          m.Chat + "/" + m.ID,
		Time:        m.Time,
		Attachments: a.attachments(m),
	}, true
}

// maxRemembered bounds the ids of sent messages kept to recognise echoes.
const maxRemembered = 256

func (a *Adapter) remember(id string) {
	if id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sent) >= maxRemembered {
		clear(a.sent)
	}
	a.sent[id] = true
}

func (a *Adapter) wasSent(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent[id]
}

// classify marks a Client's failure by what a retry can do about it; in
// Run, a logged-out device is refused credentials.
func classify(err error, running bool) error {
	var se *ServerError
	switch {
	case errors.Is(err, ErrLoggedOut):
		err = fmt.Errorf("%w: %s", err, LinkHint)
		if running {
			return platform.Refused(err)
		}
		return platform.Permanent(err)
	case errors.Is(err, ErrBadChat):
		return platform.Permanent(err)
	case errors.As(err, &se):
		switch {
		case se.Code == 429:
			return platform.RetryAfter(se.Wait, err)
		case se.Code == 401 && running:
			return platform.Refused(fmt.Errorf("%w: %s", err, LinkHint))
		case se.Code == 405 || se.Code == 501:
			return platform.NotOffered(err) // the sidecar lacks the method
		case se.Code >= 400 && se.Code < 500:
			return platform.Permanent(err)
		}
	}
	return err // network, timeouts, 5xx: transient
}

// Package whatsapptest is an in-memory WhatsApp behind whatsapp.Client.
//
// Other platforms' fakes are loopback servers built on fakekit, speaking
// the service's wire protocol. WhatsApp's is end-to-end encrypted Noise
// and Signal-protocol frames over a websocket, with server-signed pairing:
// no fake server of it is practical. The adapter's logic therefore sits
// behind the small whatsapp.Client interface, and this fake implements
// that interface in memory, keeping WhatsApp's delivery rules: messages
// arrive in order, one not acknowledged comes again on the next
// connection, a logged-out device cannot connect.
package whatsapptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

// Sent is a message the adapter sent: text, or a file with its caption
// as Text.
type Sent struct {
	ID, Chat, Text string
	File           *SentFile // nil for a text message
}

// SentFile is a file the adapter sent, as the message carries it.
type SentFile struct {
	Name      string // a document's file name; "" for an image
	MediaType string
	Image     bool // an image message, not a document
	Data      []byte
}

// Fake is an in-memory WhatsApp account; the zero value is not usable,
// New makes one.
type Fake struct {
	self string

	mu         sync.Mutex
	wake       chan struct{} // closed and replaced on every change
	nextID     int
	pending    []whatsapp.Message // delivered in order until acknowledged
	acked      map[string]bool
	sent       []Sent
	composing  []string
	connects   int
	listening  int
	conn       int // bumped by Drop: the current connection ends
	down       bool
	loggedOut  bool
	failSend   *whatsapp.ServerError
	loseSend   bool
	noPresence bool
	hold       chan struct{} // sends wait for it to close while not nil
	held       int
	media      map[string][]byte // file bytes by Media.Ref, for Download
	downloads  int
}

var _ whatsapp.Client = (*Fake)(nil)

// errNotConnected is what whatsmeow answers a send with while offline.
var errNotConnected = errors.New("whatsapptest: websocket not connected")

// errNoAck is a send WhatsApp took whose acknowledgement never came.
var errNoAck = errors.New("whatsapptest: timed out waiting for the server's ack")

// New makes an account whose own JID is self (user@s.whatsapp.net).
func New(self string) *Fake {
	return &Fake{self: self, wake: make(chan struct{}), acked: map[string]bool{}, media: map[string][]byte{}}
}

func (f *Fake) changed() {
	close(f.wake)
	f.wake = make(chan struct{})
}

// Self is the account's JID.
func (f *Fake) Self() string { return f.self }

// Listen delivers pending messages in order; see whatsapp.Client.
func (f *Fake) Listen(ctx context.Context, connected func(), handle func(context.Context, whatsapp.Message) error) error {
	f.mu.Lock()
	switch {
	case f.loggedOut:
		f.mu.Unlock()
		return whatsapp.ErrLoggedOut
	case f.down:
		f.mu.Unlock()
		return errors.New("whatsapptest: connection refused")
	}
	conn := f.conn
	f.connects++
	f.listening++
	f.changed()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.listening--
		f.changed()
		f.mu.Unlock()
	}()
	connected()
	for {
		f.mu.Lock()
		switch {
		case f.loggedOut:
			f.mu.Unlock()
			return whatsapp.ErrLoggedOut
		case f.conn != conn || f.down:
			f.mu.Unlock()
			return errors.New("whatsapptest: connection dropped")
		}
		if len(f.pending) > 0 {
			m := f.pending[0]
			f.mu.Unlock()
			if err := handle(ctx, m); err != nil {
				return err // not acknowledged: it comes again next time
			}
			f.mu.Lock()
			if len(f.pending) > 0 && f.pending[0].ID == m.ID {
				f.pending = f.pending[1:]
			}
			f.acked[m.ID] = true
			f.changed()
			f.mu.Unlock()
			continue
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
	}
}

// SendText records the message, unless a failure was asked for or sends
// are held; with LoseNextSend it records it and fails. A message gets the
// id given, or a new one for "".
func (f *Fake) SendText(ctx context.Context, chat, id, text string) (string, error) {
	return f.send(ctx, Sent{ID: id, Chat: chat, Text: text})
}

// SendFile reads body and records the file as SendText records text, its
// caption as the message's text.
func (f *Fake) SendFile(ctx context.Context, chat, id string, up whatsapp.Upload, body io.Reader) (string, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return "", err
	}
	if int64(len(data)) != up.Size {
		return "", fmt.Errorf("whatsapptest: file of %d bytes said to be %d", len(data), up.Size)
	}
	file := &SentFile{MediaType: up.MediaType, Image: up.Image, Data: data}
	if !up.Image {
		file.Name = up.Name
	}
	return f.send(ctx, Sent{ID: id, Chat: chat, Text: up.Caption, File: file})
}

// send records m as sent, as SendText says.
func (f *Fake) send(ctx context.Context, m Sent) (string, error) {
	chat, id := m.Chat, m.ID
	f.mu.Lock()
	if hold := f.hold; hold != nil {
		f.held++
		f.changed()
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-hold:
		}
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	if f.loggedOut {
		return "", whatsapp.ErrLoggedOut
	}
	if f.down {
		return "", errNotConnected
	}
	if f.failSend != nil {
		err := f.failSend
		f.failSend = nil
		return "", err
	}
	if len(chat) < 3 || chat[0] == '@' {
		return "", fmt.Errorf("%w: %q", whatsapp.ErrBadChat, chat)
	}
	if id == "" {
		id = f.id()
	}
	m.ID = id
	f.sent = append(f.sent, m)
	f.changed()
	if f.loseSend {
		f.loseSend = false
		return "", errNoAck
	}
	return id, nil
}

// Composing records the chat, or refuses as a server without presences
// would after Unsupported.
func (f *Fake) Composing(_ context.Context, chat string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errNotConnected
	}
	if f.noPresence {
		return &whatsapp.ServerError{Code: 405, Text: "not-allowed"}
	}
	f.composing = append(f.composing, chat)
	f.changed()
	return nil
}

func (f *Fake) id() string {
	f.nextID++
	return "3EB0" + strconv.Itoa(f.nextID)
}

// Push makes m arrive (its ID and Time are filled in when empty) and
// returns its id.
func (f *Fake) Push(m whatsapp.Message) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.ID == "" {
		m.ID = f.id()
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	f.pending = append(f.pending, m)
	f.changed()
	return m.ID
}

// PushSelf is the owner writing text in their chat with themselves.
func (f *Fake) PushSelf(text string) string {
	return f.Push(whatsapp.Message{Chat: f.self, Sender: f.self, SenderName: "Owner", FromMe: true, Text: text})
}

// PushFrom is someone else writing text in chat.
func (f *Fake) PushFrom(chat, sender, name, text string) string {
	return f.Push(whatsapp.Message{Chat: chat, Sender: sender, SenderName: name, Text: text})
}

// Sent is every message sent, in order, repeats of an id included.
func (f *Fake) Sent() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Sent(nil), f.sent...)
}

// Shown is what the account's phones show of the messages sent: every
// message once, in order — a WhatsApp client drops a message whose id it
// already has.
func (f *Fake) Shown() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Sent
	seen := map[string]bool{}
	for _, m := range f.sent {
		if !seen[m.Chat+"/"+m.ID] {
			seen[m.Chat+"/"+m.ID] = true
			out = append(out, m)
		}
	}
	return out
}

// Composing is every chat "typing…" was shown in.
func (f *Fake) ComposingIn() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.composing...)
}

// Acked reports whether the message with id was acknowledged.
func (f *Fake) Acked(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked[id]
}

// Connects counts connections made; Listening is how many are open.
func (f *Fake) Connects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects
}

// Listening is how many connections are open.
func (f *Fake) Listening() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listening
}

// Drop ends the open connections, as a network failure would.
func (f *Fake) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conn++
	f.changed()
}

// Down refuses connections (and ends the open ones) until Up.
func (f *Fake) Down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = true
	f.changed()
}

// Up accepts connections again.
func (f *Fake) Up() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = false
	f.changed()
}

// LogOut unlinks the device, as removing it on the phone does.
func (f *Fake) LogOut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loggedOut = true
	f.changed()
}

// FailNextSend makes the next SendText fail with the server's code (and
// the wait a 429 asks for).
func (f *Fake) FailNextSend(code int, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSend = &whatsapp.ServerError{Code: code, Text: "fake failure", Wait: wait}
}

// LoseNextSend makes the next SendText reach WhatsApp but fail as if its
// acknowledgement never came: sent, and the adapter not told so.
func (f *Fake) LoseNextSend() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseSend = true
}

// NoPresence makes Composing refused from now on.
func (f *Fake) NoPresence() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noPresence = true
}

// HoldSends keeps sends waiting until the returned release is called (it
// may be called more than once).
func (f *Fake) HoldSends() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hold := make(chan struct{})
	f.hold = hold
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.hold == hold {
				f.hold = nil
			}
			close(hold)
			f.changed()
		})
	}
}

// Held is how many sends waited on HoldSends.
func (f *Fake) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// Wait blocks until cond holds (it is called without the fake's lock) or
// ctx ends.
func (f *Fake) Wait(ctx context.Context, cond func() bool) error {
	for {
		f.mu.Lock()
		wake := f.wake
		f.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// Download serves the bytes of a file pushed with PushFile, counted in
// Downloads, as whatsmeow downloads from WhatsApp's media servers.
func (f *Fake) Download(_ context.Context, m whatsapp.Media) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.downloads++
	f.changed()
	if f.loggedOut {
		return nil, whatsapp.ErrLoggedOut
	}
	if f.down {
		return nil, errNotConnected
	}
	data, ok := f.media[string(m.Ref)]
	if !ok {
		// What whatsmeow answers for media the servers no longer have.
		return nil, &whatsapp.ServerError{Code: 404, Text: "download failed with status code 404"}
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Downloads counts the downloads asked for, served or not.
func (f *Fake) Downloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downloads
}

// PushFile makes a message with one file arrive, as m (its Files are
// replaced) with file described by desc: its Ref and Hash are filled in,
// and its Size is len(data) when 0. It returns the message's id.
func (f *Fake) PushFile(m whatsapp.Message, desc whatsapp.Media, data []byte) string {
	sum := sha256.Sum256(data)
	desc.Hash = hex.EncodeToString(sum[:])
	if desc.Size == 0 {
		desc.Size = int64(len(data))
	}
	f.mu.Lock()
	desc.Ref = []byte("/mms/" + strconv.Itoa(len(f.media)+1))
	f.media[string(desc.Ref)] = bytes.Clone(data)
	f.mu.Unlock()
	m.Files = []whatsapp.Media{desc}
	return f.Push(m)
}

// ExpireMedia drops every file's bytes, as WhatsApp's media servers do
// some weeks after a message: a download then fails with a 404.
func (f *Fake) ExpireMedia() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.media)
}

package whatsapp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// WhatsApp's protocol library (whatsmeow, with some sixty generated
// protobuf packages registered at start-up) is linked into a program of
// its own, baton-whatsapp, so that no other baton command, and no gateway
// without WhatsApp, loads or initializes it: linked into baton it made
// every command start twice as slowly and take 8 MiB more. The adapter
// runs baton-whatsapp as a child process (Process) and speaks to it over
// the child's stdin and stdout, one JSON object per line; Serve is the
// child's side. The Client interface is the whole conversation.

// protocolVersion changes whenever a frame changes meaning: baton and
// baton-whatsapp from different versions refuse each other clearly.
// Version 2 carries files.
const protocolVersion = 2

// maxFrame bounds one line of the protocol: a message of WhatsApp's
// longest (65,536 characters) with room for its JSON.
const maxFrame = 1 << 20

// chunkSize is the most file bytes one frame carries: in base64, with
// the frame around it, well under maxFrame.
const chunkSize = 512 << 10

// frame is one line of the protocol, in either direction.
type frame struct {
	// From baton to baton-whatsapp: listen, stop, ack, send, composing;
	// for a file in: download (Media), then read (Handle) until EOF, then
	// close; for a file out: upload, put (Handle, Data) for each chunk,
	// then sendfile (Handle, File), or close to give up.
	Op string `json:"op,omitempty"`
	// ID ties a send or composing to its reply, and a listen to its
	// events.
	ID   int64  `json:"id,omitempty"`
	Seq  int64  `json:"seq,omitempty"` // a message and its ack
	Chat string `json:"chat,omitempty"`
	Text string `json:"text,omitempty"`
	// MsgID is the message id a send asks for ("": WhatsApp's client
	// makes one up); see Client.SendText.
	MsgID string  `json:"msg_id,omitempty"`
	Media *Media  `json:"media,omitempty"`
	File  *Upload `json:"file,omitempty"`
	// Handle names a file being read or written across frames.
	Handle int64  `json:"handle,omitempty"`
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"` // no more Data after this reply's

	// From baton-whatsapp: hello (first), connected, message, ended
	// (Listen returned), or a reply.
	Event   string     `json:"event,omitempty"`
	Reply   int64      `json:"reply,omitempty"`
	Result  string     `json:"result,omitempty"`
	Message *Message   `json:"message,omitempty"`
	Self    string     `json:"self,omitempty"`
	Version int        `json:"version,omitempty"`
	Error   *wireError `json:"error,omitempty"`
}

// wireError carries a Client's error with what the adapter classifies it
// by.
type wireError struct {
	Kind   string `json:"kind,omitempty"` // logged_out, bad_chat, server or ""
	Text   string `json:"text"`
	Code   int    `json:"code,omitempty"`
	WaitMS int64  `json:"wait_ms,omitempty"`
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Text: err.Error()}
	var se *ServerError
	switch {
	case errors.Is(err, ErrLoggedOut):
		w.Kind = "logged_out"
	case errors.Is(err, ErrBadChat):
		w.Kind = "bad_chat"
	case errors.As(err, &se):
		w.Kind, w.Code, w.WaitMS, w.Text = "server", se.Code, se.Wait.Milliseconds(), se.Text
	}
	return w
}

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	switch w.Kind {
	case "logged_out":
		return ErrLoggedOut
	case "bad_chat":
		return fmt.Errorf("%w: %s", ErrBadChat, w.Text)
	case "server":
		return &ServerError{Code: w.Code, Text: w.Text, Wait: time.Duration(w.WaitMS) * time.Millisecond}
	}
	return errors.New(w.Text)
}

// Serve is baton-whatsapp's side: it says hello (with open's error, if
// the device could not be opened, or an empty Self if none is linked)
// and then answers baton's frames on in with c, until in ends.
func Serve(ctx context.Context, in io.Reader, out io.Writer, c Client, openErr error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wmu sync.Mutex
		enc = json.NewEncoder(out)
	)
	write := func(f frame) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = enc.Encode(f) // a broken stdout shows as the end of stdin too
	}
	hello := frame{Event: "hello", Version: protocolVersion, Error: toWire(openErr)}
	if openErr == nil {
		hello.Self = c.Self()
	}
	write(hello)
	if openErr != nil {
		return openErr
	}

	var (
		work   sync.WaitGroup
		mu     sync.Mutex
		acks   = map[int64]chan error{}
		seq    int64
		listen context.CancelFunc
		files  = &openFiles{}
	)
	defer files.closeAll() // after the work is done
	defer work.Wait()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxFrame)
	for sc.Scan() {
		var f frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("whatsapp: serve: bad frame: %w", err)
		}
		switch f.Op {
		case "listen":
			mu.Lock()
			if listen != nil {
				listen() // a new Listen replaces the old one
			}
			lctx, lcancel := context.WithCancel(ctx)
			listen = lcancel
			mu.Unlock()
			gen := f.ID
			work.Go(func() {
				err := c.Listen(lctx,
					func() { write(frame{Event: "connected", ID: gen}) },
					func(hctx context.Context, m Message) error {
						mu.Lock()
						seq++
						n := seq
						ack := make(chan error, 1)
						acks[n] = ack
						mu.Unlock()
						defer func() {
							mu.Lock()
							delete(acks, n)
							mu.Unlock()
						}()
						write(frame{Event: "message", ID: gen, Seq: n, Message: &m})
						select {
						case err := <-ack:
							return err
						case <-hctx.Done():
							return hctx.Err()
						}
					})
				lcancel()
				write(frame{Event: "ended", ID: gen, Error: toWire(err)})
			})
		case "stop":
			mu.Lock()
			if listen != nil {
				listen()
				listen = nil
			}
			mu.Unlock()
		case "ack":
			mu.Lock()
			ack := acks[f.Seq]
			mu.Unlock()
			if ack != nil {
				ack <- f.Error.err()
			}
		case "send":
			work.Go(func() {
				id, err := c.SendText(ctx, f.Chat, f.MsgID, f.Text)
				write(frame{Reply: f.ID, Result: id, Error: toWire(err)})
			})
		case "composing":
			work.Go(func() {
				write(frame{Reply: f.ID, Error: toWire(c.Composing(ctx, f.Chat))})
			})
		case "download", "read", "upload", "put", "sendfile", "close":
			// Each file's frames come one at a time, each after the
			// reply to the one before.
			work.Go(func() { write(files.serve(ctx, c, f)) })
		default:
			write(frame{Reply: f.ID, Error: &wireError{Text: fmt.Sprintf("baton-whatsapp: unknown op %q", f.Op)}})
		}
	}
	cancel() // baton is gone: stop listening and sending
	if err := sc.Err(); err != nil {
		return fmt.Errorf("whatsapp: serve: %w", err)
	}
	return nil
}

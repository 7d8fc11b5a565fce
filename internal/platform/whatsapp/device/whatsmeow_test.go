package device

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/testutil"
)

// The owner's account, as a linked device (device 7) sees it.
var (
	ownPN   = types.JID{User: "4915550000", Server: types.DefaultUserServer, Device: 7}
	ownLID  = types.JID{User: "208751722301", Server: types.HiddenUserServer}
	ownSelf = selfIDs{pn: ownPN, lid: ownLID}
	phone   = types.JID{User: "4915550000", Server: types.DefaultUserServer} // the owner's phone, device 0
	friend  = types.JID{User: "4915559999", Server: types.DefaultUserServer}
	friendL = types.JID{User: "99887766", Server: types.HiddenUserServer}
	group   = types.JID{User: "120363025", Server: types.GroupServer}
)

func recorded(chat, sender types.JID, fromMe bool, msg *waE2E.Message) *events.Message {
	return &events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: chat, Sender: sender, IsFromMe: fromMe, IsGroup: chat.Server == types.GroupServer},
			ID:            "3EB0C4F1A2", PushName: "Owner", Timestamp: time.Unix(1763900000, 0),
		},
		Message: msg,
	}
}

func text(s string) *waE2E.Message { return &waE2E.Message{Conversation: proto.String(s)} }

// Recorded whatsmeow events pass through messageOf and the adapter's
// filter: only the owner's own chat (by number or LID) and the configured
// home reach the gateway, as Events with the fields it needs.
func TestRecordedEventsMapped(t *testing.T) {
	self := ownPN.ToNonAD().String()
	home := group.String()
	extended := &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String("see https://example.com")}}
	edit := recorded(phone, phone, true, text("edited"))
	edit.IsEdit = true
	lidSender := recorded(group, friendL, false, text("from a LID"))
	lidSender.Info.SenderAlt = friend

	cases := []struct {
		name string
		evt  *events.Message
		want *platform.Event // nil: not baton's
	}{
		{"own chat from the phone", recorded(phone, phone, true, text("hello baton")),
			&platform.Event{At: platform.Address{Platform: whatsapp.Name, Kind: platform.DM, Chat: self}, SenderID: self, Sender: "Owner", Text: "hello baton"}},
		{"own chat by LID", recorded(ownLID, ownLID, true, extended),
			&platform.Event{At: platform.Address{Platform: whatsapp.Name, Kind: platform.DM, Chat: self}, SenderID: self, Sender: "Owner", Text: "see https://example.com"}},
		{"home group, the owner", recorded(group, phone, true, text("in the group")),
			&platform.Event{At: platform.Address{Platform: whatsapp.Name, Kind: platform.Group, Chat: home}, SenderID: self, Sender: "Owner", Text: "in the group"}},
		{"home group, someone by LID", lidSender,
			&platform.Event{At: platform.Address{Platform: whatsapp.Name, Kind: platform.Group, Chat: home}, SenderID: friend.String(), Sender: "Owner", Text: "from a LID"}},
		{"a friend writing to the owner", recorded(friend, friend, false, text("are you free?")), nil},
		{"the owner writing to a friend", recorded(friend, phone, true, text("yes")), nil},
		{"another group", recorded(types.JID{User: "120363999", Server: types.GroupServer}, phone, true, text("family")), nil},
		{"baton's own reply, echoed", recorded(phone, ownPN, true, text("Hi on WhatsApp")), nil},
		{"an edit", edit, nil},
		{"a reaction", recorded(phone, phone, true, &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{Text: proto.String("👍")}}), nil},
		{"an image without caption", recorded(phone, phone, true, &waE2E.Message{ImageMessage: &waE2E.ImageMessage{}}), nil},
		{"a status update", recorded(types.StatusBroadcastJID, phone, true, text("status")), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *platform.Event
			if m, ok := messageOf(c.evt, ownSelf); ok {
				got = throughAdapter(t, self, home, m)
			}
			if c.want == nil {
				if got != nil {
					t.Fatalf("handed over %+v", *got)
				}
				return
			}
			if got == nil {
				t.Fatal("not handed over")
			}
			c.want.ID = c.want.At.Chat + "/3EB0C4F1A2"
			c.want.Time = time.Unix(1763900000, 0)
			if !reflect.DeepEqual(*got, *c.want) {
				t.Errorf("got  %+v\nwant %+v", *got, *c.want)
			}
		})
	}
}

// whatsmeow's send errors reach the gateway classified: a 429 without a
// wait is retried with the gateway's backoff, a 403 is not.
func TestSendErrorsMapped(t *testing.T) {
	for _, c := range []struct {
		iq   whatsmeow.IQError
		want platform.Class
	}{{whatsmeowIQ429, platform.ClassTransient}, {whatsmeowIQ403, platform.ClassPermanent}} {
		a, err := whatsapp.New(whatsapp.Config{Client: fixed{self: ownPN.ToNonAD().String(), sendErr: sendError(&c.iq)}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Send(t.Context(), whatsapp.HomeAddress(ownPN.ToNonAD().String()), "hi")
		if cl, _ := platform.Classify(err); cl != c.want {
			t.Errorf("%d: %v, want %v", c.iq.Code, cl, c.want)
		}
	}
}

// throughAdapter hands m to the adapter as its Client would and returns
// the event the adapter handed the gateway, nil for none.
func throughAdapter(t *testing.T, self, home string, m whatsapp.Message) *platform.Event {
	t.Helper()
	replayed := make(chan struct{})
	a, err := whatsapp.New(whatsapp.Config{Client: fixed{self: self, msgs: []whatsapp.Message{m}, replayed: replayed}, Home: home, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got *platform.Event
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(_ context.Context, ev platform.Event) error {
			got = &ev
			return nil
		}))
	}()
	testutil.Receive(t, replayed, "the message to be handed over")
	cancel()
	if err := testutil.Receive(t, done, "Run to end"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return got
}

var (
	whatsmeowIQ429 = whatsmeow.IQError{Code: 429, Text: "rate-overlimit"}
	whatsmeowIQ403 = whatsmeow.IQError{Code: 403, Text: "forbidden"}
)

// fixed is a Client that hands over msgs once connected (then says so on
// replayed) and answers every send with sendErr.
type fixed struct {
	self     string
	msgs     []whatsapp.Message
	replayed chan struct{}
	sendErr  error
}

func (f fixed) Self() string { return f.self }
func (f fixed) Listen(ctx context.Context, connected func(), handle func(context.Context, whatsapp.Message) error) error {
	connected()
	for _, m := range f.msgs {
		if err := handle(ctx, m); err != nil {
			return err
		}
	}
	if f.replayed != nil {
		close(f.replayed)
	}
	<-ctx.Done()
	return nil
}
func (f fixed) SendText(context.Context, string, string, string) (string, error) {
	return "", f.sendErr
}
func (fixed) Composing(context.Context, string) error { return errors.New("not connected") }
func (fixed) Download(context.Context, whatsapp.Media) (io.ReadCloser, error) {
	return nil, errors.New("not connected")
}
func (f fixed) SendFile(context.Context, string, string, whatsapp.Upload, io.Reader) (string, error) {
	return "", f.sendErr
}

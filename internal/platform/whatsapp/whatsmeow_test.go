package whatsapp

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/baton-agent/baton/internal/platform"
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
	a, err := New(Config{Client: selfOnly(self), Home: home})
	if err != nil {
		t.Fatal(err)
	}
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
			&platform.Event{At: platform.Address{Platform: Name, Kind: platform.DM, Chat: self}, SenderID: self, Sender: "Owner", Text: "hello baton"}},
		{"own chat by LID", recorded(ownLID, ownLID, true, extended),
			&platform.Event{At: platform.Address{Platform: Name, Kind: platform.DM, Chat: self}, SenderID: self, Sender: "Owner", Text: "see https://example.com"}},
		{"home group, the owner", recorded(group, phone, true, text("in the group")),
			&platform.Event{At: platform.Address{Platform: Name, Kind: platform.Group, Chat: home}, SenderID: self, Sender: "Owner", Text: "in the group"}},
		{"home group, someone by LID", lidSender,
			&platform.Event{At: platform.Address{Platform: Name, Kind: platform.Group, Chat: home}, SenderID: friend.String(), Sender: "Owner", Text: "from a LID"}},
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
				if ev, ok := a.event(m); ok {
					got = &ev
				}
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
			if *got != *c.want {
				t.Errorf("got  %+v\nwant %+v", *got, *c.want)
			}
		})
	}
}

func TestSendErrorsMapped(t *testing.T) {
	if cl, _ := platform.Classify(classify(sendError(&whatsmeowIQ429), false)); cl != platform.ClassTransient {
		// A 429 without a wait is retried with the gateway's backoff.
		t.Errorf("429 without a wait: %v", cl)
	}
	if cl, _ := platform.Classify(classify(sendError(&whatsmeowIQ403), false)); cl != platform.ClassPermanent {
		t.Errorf("403: %v", cl)
	}
}

var (
	whatsmeowIQ429 = whatsmeow.IQError{Code: 429, Text: "rate-overlimit"}
	whatsmeowIQ403 = whatsmeow.IQError{Code: 403, Text: "forbidden"}
)

// selfOnly answers Self; the mapping needs nothing else of a Client (the
// import cycle keeps whatsapptest out of this internal test).
type selfOnly string

func (s selfOnly) Self() string { return string(s) }
func (selfOnly) Listen(context.Context, func(), func(context.Context, Message) error) error {
	return errors.New("not connected")
}
func (selfOnly) SendText(context.Context, string, string, string) (string, error) {
	return "", errors.New("not connected")
}
func (selfOnly) Composing(context.Context, string) error { return errors.New("not connected") }

package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/store"
)

// at is a fixed time with whole microseconds, the finest every store keeps.
var at = time.Date(2026, 11, 23, 9, 30, 0, 123456000, time.UTC)

func inbound(platform, msgID, text string) store.Inbound {
	return store.Inbound{Platform: platform, PlatformMsgID: msgID, AddressKey: platform + ":dm:1",
		SenderID: "1", Sender: "ada", Text: text}
}

func inboundIDs(ins []store.Inbound) []int64 {
	out := make([]int64, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

func deliveryIDs(ds []store.Delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func eqIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

var inboxTests = map[string]func(*testing.T, store.Store){
	"AddInboundStoresEveryField": func(t *testing.T, s store.Store) {
		in := store.Inbound{Platform: "telegram", PlatformMsgID: "77", AddressKey: "telegram:dm:5",
			SenderID: "5", Sender: "Ada", Text: "hello\x00 wörld", ReceivedAt: at}
		got, isNew := must2(s.AddInbound(ctx(t), in))
		eq(t, "new", isNew, true)
		if got.ID == 0 {
			t.Fatal("no id assigned")
		}
		if !got.ReceivedAt.Equal(at) || !got.DoneAt.IsZero() {
			t.Fatalf("times: received %v done %v", got.ReceivedAt, got.DoneAt)
		}
		got.ID, got.ReceivedAt, in.ReceivedAt = 0, time.Time{}, time.Time{}
		eq(t, "stored event", fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", in))
		pending := must(s.PendingInbound(ctx(t), 0, 0))
		eq(t, "pending", len(pending), 1)
		eq(t, "pending text", pending[0].Text, "hello\x00 wörld")
		eq(t, "pending sender", pending[0].Sender, "Ada")
		if !pending[0].ReceivedAt.Equal(at) {
			t.Fatalf("pending received at %v, want %v", pending[0].ReceivedAt, at)
		}
	},
	"AddInboundFillsReceivedAt": func(t *testing.T, s store.Store) {
		before := time.Now().Add(-time.Second)
		got, _ := must2(s.AddInbound(ctx(t), inbound("web", "", "hi")))
		if got.ReceivedAt.Before(before) || got.ReceivedAt.After(time.Now().Add(time.Second)) {
			t.Fatalf("received at %v, want about now", got.ReceivedAt)
		}
	},
	"RedeliveryReturnsEarlierRow": func(t *testing.T, s store.Store) {
		first, isNew := must2(s.AddInbound(ctx(t), inbound("telegram", "m1", "original")))
		eq(t, "first is new", isNew, true)
		again, isNew := must2(s.AddInbound(ctx(t), inbound("telegram", "m1", "redelivered")))
		eq(t, "redelivery is new", isNew, false)
		eq(t, "redelivery id", again.ID, first.ID)
		eq(t, "redelivery keeps the stored text", again.Text, "original")
		other, isNew := must2(s.AddInbound(ctx(t), inbound("discord", "m1", "same id elsewhere")))
		eq(t, "same id on another platform is new", isNew, true)
		if other.ID == first.ID {
			t.Fatal("another platform's event got the same row")
		}
		eq(t, "pending", len(must(s.PendingInbound(ctx(t), 0, 0))), 2)
		// After it was handled, a redelivery still is one, and says so.
		noErr(t, s.MarkInboundDone(ctx(t), first.ID))
		late, isNew := must2(s.AddInbound(ctx(t), inbound("telegram", "m1", "late")))
		eq(t, "late redelivery is new", isNew, false)
		if late.DoneAt.IsZero() {
			t.Fatal("a redelivery of a handled event does not show it done")
		}
		eq(t, "pending after late redelivery", len(must(s.PendingInbound(ctx(t), 0, 0))), 1)
	},
	"EmptyPlatformMsgIDIsNeverDuplicate": func(t *testing.T, s store.Store) {
		a, newA := must2(s.AddInbound(ctx(t), inbound("web", "", "one")))
		b, newB := must2(s.AddInbound(ctx(t), inbound("web", "", "one")))
		eq(t, "first new", newA, true)
		eq(t, "second new", newB, true)
		if a.ID == b.ID {
			t.Fatal("two events without platform id share a row")
		}
	},
	"ConcurrentRedeliveryStoresOnce": func(t *testing.T, s store.Store) {
		const n = 8
		var wg sync.WaitGroup
		got := make([]store.Inbound, n)
		news := make([]bool, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { got[i], news[i], errs[i] = s.AddInbound(ctx(t), inbound("telegram", "race", "x")) })
		}
		wg.Wait()
		fresh := 0
		for i := range n {
			noErr(t, errs[i])
			if news[i] {
				fresh++
			}
			eq(t, "same row", got[i].ID, got[0].ID)
		}
		eq(t, "stored as new", fresh, 1)
		eq(t, "pending", len(must(s.PendingInbound(ctx(t), 0, 0))), 1)
	},
	"PendingInboundOldestFirstUntilDone": func(t *testing.T, s store.Store) {
		var all []store.Inbound
		for i, id := range []string{"a", "b", "c", "d"} {
			in := inbound("telegram", id, id)
			// Platform times out of order: the order is the order stored.
			in.ReceivedAt = at.Add(-time.Duration(i) * time.Minute)
			all = append(all, must2First(s.AddInbound(ctx(t), in)))
		}
		eqIDs(t, "pending", inboundIDs(must(s.PendingInbound(ctx(t), 0, 0))), inboundIDs(all))
		noErr(t, s.MarkInboundDone(ctx(t), all[1].ID))
		eqIDs(t, "pending after b done", inboundIDs(must(s.PendingInbound(ctx(t), 0, 0))),
			[]int64{all[0].ID, all[2].ID, all[3].ID})
		eqIDs(t, "limit 2", inboundIDs(must(s.PendingInbound(ctx(t), 0, 2))), []int64{all[0].ID, all[2].ID})
		// Marking again is harmless and keeps the event done.
		noErr(t, s.MarkInboundDone(ctx(t), all[1].ID))
		eq(t, "pending after second mark", len(must(s.PendingInbound(ctx(t), 0, 0))), 3)
		wantErr(t, s.MarkInboundDone(ctx(t), all[3].ID+1000), store.ErrNotFound)
	},
	"AnswerInboundMarksItDone": func(t *testing.T, s store.Store) {
		a := must2First(s.AddInbound(ctx(t), inbound("telegram", "a", "hello")))
		b := must2First(s.AddInbound(ctx(t), inbound("telegram", "b", "again")))
		ans := must(s.AnswerInbound(ctx(t), a.ID, delivery("in:a:part:0", "telegram:chat:1", "hi"), delivery("in:a:offer:part:0", "telegram:chat:1", "offer")))
		ds := ans.Deliveries
		eq(t, "stored", len(ds), 2)
		eq(t, "behind nothing", ans.Behind, false)
		eqIDs(t, "pending inbound", inboundIDs(must(s.PendingInbound(ctx(t), 0, 0))), []int64{b.ID})
		eq(t, "pending deliveries", len(must(s.PendingDeliveries(ctx(t), "telegram:chat:1", 0))), 2)
		// Answered again (a retry): nothing new, still done.
		again := must(s.AnswerInbound(ctx(t), a.ID, delivery("in:a:part:0", "telegram:chat:1", "hi"))).Deliveries
		eq(t, "same row", again[0].ID, ds[0].ID)
		eq(t, "pending deliveries after the retry", len(must(s.PendingDeliveries(ctx(t), "telegram:chat:1", 0))), 2)
		// An unknown event stores nothing.
		_, err := s.AnswerInbound(ctx(t), b.ID+1000, delivery("in:x:part:0", "telegram:chat:1", "lost"))
		wantErr(t, err, store.ErrNotFound)
		eq(t, "pending deliveries after the unknown", len(must(s.PendingDeliveries(ctx(t), "telegram:chat:1", 0))), 2)
		eqIDs(t, "pending inbound at the end", inboundIDs(must(s.PendingInbound(ctx(t), 0, 0))), []int64{b.ID})
		// b's answer waits behind a's two, which are unsent; once they are
		// sent it waits behind none.
		eq(t, "behind the unsent", must(s.AnswerInbound(ctx(t), b.ID, delivery("in:b:part:0", "telegram:chat:1", "b"))).Behind, true)
		eq(t, "another address behind nothing", must(s.AnswerInbound(ctx(t), b.ID, delivery("in:b:part:0:x", "telegram:chat:2", "b"))).Behind, false)
		for _, d := range ds {
			noErr(t, s.MarkDelivered(ctx(t), d.ID, "p"))
		}
		eq(t, "behind the sent", must(s.AnswerInbound(ctx(t), b.ID, delivery("in:b:part:0", "telegram:chat:1", "b"))).Behind, false)
	},
	"PendingInboundDefaultLimit": func(t *testing.T, s store.Store) {
		for range store.DefaultQueueLimit + 5 {
			must2(s.AddInbound(ctx(t), inbound("web", "", "x")))
		}
		eq(t, "default limit", len(must(s.PendingInbound(ctx(t), 0, 0))), store.DefaultQueueLimit)
		eq(t, "larger limit", len(must(s.PendingInbound(ctx(t), 0, 1000))), store.DefaultQueueLimit+5)
	},
	"PendingInboundPagesAfterAnID": func(t *testing.T, s store.Store) {
		var all []store.Inbound
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			all = append(all, must2First(s.AddInbound(ctx(t), inbound("web", id, id))))
		}
		noErr(t, s.MarkInboundDone(ctx(t), all[2].ID))
		first := must(s.PendingInbound(ctx(t), 0, 2))
		eqIDs(t, "first page", inboundIDs(first), []int64{all[0].ID, all[1].ID})
		second := must(s.PendingInbound(ctx(t), first[1].ID, 2))
		eqIDs(t, "second page skips the done one", inboundIDs(second), []int64{all[3].ID, all[4].ID})
		eq(t, "after the last", len(must(s.PendingInbound(ctx(t), second[1].ID, 2))), 0)
	},
	"AddInboundInvalid": func(t *testing.T, s store.Store) {
		in := inbound("", "1", "x")
		_, _, err := s.AddInbound(ctx(t), in)
		wantErr(t, err, store.ErrInvalid)
		in = inbound("telegram", "1", "x")
		in.AddressKey = ""
		_, _, err = s.AddInbound(ctx(t), in)
		wantErr(t, err, store.ErrInvalid)
		eq(t, "nothing stored", len(must(s.PendingInbound(ctx(t), 0, 0))), 0)
	},
}

func must2First[A, B any](a A, _ B, err error) A {
	if err != nil {
		panic(failure{err})
	}
	return a
}

func delivery(key, addr, text string) store.Delivery {
	return store.Delivery{Key: key, AddressKey: addr, Text: text}
}

// storedDelivery reads a delivery back through its key: enqueueing a taken
// key returns the stored row and writes nothing.
func storedDelivery(t *testing.T, s store.Store, key string) store.Delivery {
	t.Helper()
	return must(s.EnqueueDeliveries(ctx(t), delivery(key, "unused:read-back", "unused")))[0]
}

var outboxTests = map[string]func(*testing.T, store.Store){
	"KindAndDataAreKept": func(t *testing.T, s store.Store) {
		expires := at.Add(10 * time.Minute)
		want := []store.Delivery{
			{Key: "approval:s:c:1:part:0", AddressKey: "web:dm:main", Text: "May I run **shell**?", Kind: store.DeliveryApproval,
				Data: store.DeliveryData{Tool: "sh**ell", Subject: "printf '\\n```'\nrm -rf build", Choices: []string{"approve", "always", "deny"}, Expires: expires}},
			{Key: "approval:s:c:1:timeout:part:0", AddressKey: "web:dm:main", Text: "No answer", Kind: store.DeliveryApprovalExpired,
				Data: store.DeliveryData{Tool: "shell"}},
			{Key: "in:7:where:part:0", AddressKey: "web:dm:main", Text: "This conversation is in Telegram now", Kind: store.DeliveryElsewhere,
				Data: store.DeliveryData{Place: "Telegram"}},
			{Key: "handoff:3:part:0", AddressKey: "web:dm:main", Text: "Hello again", Kind: store.DeliveryGreeting},
			{Key: "handoff:3:left:part:0", AddressKey: "web:dm:main", Text: "It moved", Kind: store.DeliveryNotice},
			{Key: "in:8:part:0", AddressKey: "web:dm:main", Text: "an answer"},
		}
		same := func(what string, got store.Delivery, w store.Delivery) {
			t.Helper()
			if got.Kind != w.Kind || got.Data.Tool != w.Data.Tool || got.Data.Subject != w.Data.Subject ||
				strings.Join(got.Data.Choices, ",") != strings.Join(w.Data.Choices, ",") ||
				!got.Data.Expires.Equal(w.Data.Expires) || got.Data.Place != w.Data.Place {
				t.Errorf("%s %q: kind %q data %+v, want %q %+v", what, w.Key, got.Kind, got.Data, w.Kind, w.Data)
			}
		}
		stored := must(s.EnqueueDeliveries(ctx(t), want...))
		for i, d := range stored {
			same("stored", d, want[i])
		}
		pending := must(s.PendingDeliveries(ctx(t), "web:dm:main", 0))
		eq(t, "pending", len(pending), len(want))
		for i, d := range pending {
			same("pending", d, want[i])
		}
		for _, w := range want {
			same("by key", must(s.DeliveryByKey(ctx(t), w.Key)), w)
			same("enqueued again", storedDelivery(t, s, w.Key), w)
		}
		// An answer stored with its event done keeps them too.
		in := must2First(s.AddInbound(ctx(t), inbound("web", "m1", "/where")))
		ans := must(s.AnswerInbound(ctx(t), in.ID, store.Delivery{Key: "in:9:part:0", AddressKey: "web:dm:main", Text: "elsewhere",
			Kind: store.DeliveryElsewhere, Data: store.DeliveryData{Place: "the terminal"}}))
		same("answer", ans.Deliveries[0], store.Delivery{Key: "in:9:part:0", Kind: store.DeliveryElsewhere, Data: store.DeliveryData{Place: "the terminal"}})
		noErr(t, s.MarkDelivered(ctx(t), ans.Deliveries[0].ID, "p1"))
		same("sent", must(s.DeliveryByKey(ctx(t), "in:9:part:0")), store.Delivery{Key: "in:9:part:0", Kind: store.DeliveryElsewhere, Data: store.DeliveryData{Place: "the terminal"}})
	},
	"EnqueueKeepsTheMessageToEdit": func(t *testing.T, s store.Store) {
		d := delivery("in:9:part:0", "telegram:dm:5", "the whole answer")
		d.PlatformMsgID = "streamed-7"
		ds := must(s.EnqueueDeliveries(ctx(t), d))
		eq(t, "message to edit", ds[0].PlatformMsgID, "streamed-7")
		p := must(s.PendingDeliveries(ctx(t), "telegram:dm:5", 0))
		if len(p) != 1 || p[0].PlatformMsgID != "streamed-7" || !p[0].SentAt.IsZero() {
			t.Fatalf("pending %+v: want it unsent, with the message it edits", p)
		}
	},
	"EnqueueStoresInOrder": func(t *testing.T, s store.Store) {
		ds := must(s.EnqueueDeliveries(ctx(t),
			delivery("handoff:1:part:0", "telegram:topic:-100:42", "first\x00 part"),
			delivery("handoff:1:part:1", "telegram:topic:-100:42", "second part"),
		))
		eq(t, "count", len(ds), 2)
		if ds[0].ID == 0 || ds[1].ID <= ds[0].ID {
			t.Fatalf("ids %d, %d: want increasing", ds[0].ID, ds[1].ID)
		}
		for _, d := range ds {
			if d.CreatedAt.IsZero() || !d.SentAt.IsZero() || d.Attempts != 0 || d.LastError != "" || d.PlatformMsgID != "" {
				t.Fatalf("new delivery: %+v", d)
			}
		}
		p := must(s.PendingDeliveries(ctx(t), "", 0))
		eqIDs(t, "pending", deliveryIDs(p), deliveryIDs(ds))
		eq(t, "key", p[0].Key, "handoff:1:part:0")
		eq(t, "address", p[0].AddressKey, "telegram:topic:-100:42")
		eq(t, "text", p[0].Text, "first\x00 part")
		eq(t, "enqueue nothing", len(must(s.EnqueueDeliveries(ctx(t)))), 0)
	},
	"EnqueueKeepsGivenCreatedAt": func(t *testing.T, s store.Store) {
		d := delivery("k", "web:thread:1", "x")
		d.CreatedAt = at
		got := must(s.EnqueueDeliveries(ctx(t), d))[0]
		if !got.CreatedAt.Equal(at) {
			t.Fatalf("created at %v, want %v", got.CreatedAt, at)
		}
	},
	"RetriedEnqueueDoesNotDuplicate": func(t *testing.T, s store.Store) {
		first := must(s.EnqueueDeliveries(ctx(t),
			delivery("handoff:12:part:0", "telegram:dm:1", "hello"),
			delivery("handoff:12:part:1", "telegram:dm:1", "again")))
		// The retried handoff produced a different text; what was queued stays.
		retry := must(s.EnqueueDeliveries(ctx(t),
			delivery("handoff:12:part:0", "telegram:dm:1", "hello, reworded"),
			delivery("handoff:12:part:1", "telegram:dm:1", "again, reworded"),
			delivery("handoff:12:part:2", "telegram:dm:1", "a new third part")))
		eq(t, "part 0 id", retry[0].ID, first[0].ID)
		eq(t, "part 0 text", retry[0].Text, "hello")
		eq(t, "part 1 id", retry[1].ID, first[1].ID)
		if retry[2].ID <= first[1].ID {
			t.Fatalf("new part id %d, want above %d", retry[2].ID, first[1].ID)
		}
		eq(t, "pending", len(must(s.PendingDeliveries(ctx(t), "", 0))), 3)
		// A key repeated inside one call is stored once too.
		dup := must(s.EnqueueDeliveries(ctx(t), delivery("k", "web:thread:1", "a"), delivery("k", "web:thread:1", "b")))
		eq(t, "same row within one call", dup[1].ID, dup[0].ID)
		eq(t, "first text wins", dup[1].Text, "a")
		eq(t, "pending after repeat", len(must(s.PendingDeliveries(ctx(t), "", 0))), 4)
		// A sent delivery is returned as sent, so it is not sent again.
		noErr(t, s.MarkDelivered(ctx(t), first[0].ID, "tg-1"))
		again := storedDelivery(t, s, "handoff:12:part:0")
		if again.SentAt.IsZero() || again.PlatformMsgID != "tg-1" {
			t.Fatalf("re-enqueued sent delivery: %+v", again)
		}
	},
	"EmptyKeyIsNeverDuplicate": func(t *testing.T, s store.Store) {
		ds := must(s.EnqueueDeliveries(ctx(t), delivery("", "web:thread:1", "x"), delivery("", "web:thread:1", "x")))
		if ds[0].ID == ds[1].ID {
			t.Fatal("two deliveries without a key share a row")
		}
		eq(t, "pending", len(must(s.PendingDeliveries(ctx(t), "", 0))), 2)
	},
	"ConcurrentEnqueueStoresOnce": func(t *testing.T, s store.Store) {
		const n = 8
		var wg sync.WaitGroup
		got := make([][]store.Delivery, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				got[i], errs[i] = s.EnqueueDeliveries(ctx(t), delivery("handoff:9:part:0", "web:thread:9", "hi"))
			})
		}
		wg.Wait()
		for i := range n {
			noErr(t, errs[i])
			eq(t, "same row", got[i][0].ID, got[0][0].ID)
		}
		eq(t, "pending", len(must(s.PendingDeliveries(ctx(t), "", 0))), 1)
	},
	"EnqueueInvalidStoresNothing": func(t *testing.T, s store.Store) {
		_, err := s.EnqueueDeliveries(ctx(t), delivery("ok", "web:thread:1", "x"), delivery("bad", "", "x"))
		wantErr(t, err, store.ErrInvalid)
		eq(t, "pending", len(must(s.PendingDeliveries(ctx(t), "", 0))), 0)
	},
	"PendingDeliveriesByAddressAndLimit": func(t *testing.T, s store.Store) {
		ds := must(s.EnqueueDeliveries(ctx(t),
			delivery("a1", "telegram:dm:1", "x"),
			delivery("b1", "discord:thread:2", "x"),
			delivery("a2", "telegram:dm:1", "x"),
			delivery("b2", "discord:thread:2", "x"),
			delivery("a3", "telegram:dm:1", "x")))
		eqIDs(t, "telegram", deliveryIDs(must(s.PendingDeliveries(ctx(t), "telegram:dm:1", 0))),
			[]int64{ds[0].ID, ds[2].ID, ds[4].ID})
		eqIDs(t, "discord", deliveryIDs(must(s.PendingDeliveries(ctx(t), "discord:thread:2", 0))),
			[]int64{ds[1].ID, ds[3].ID})
		eqIDs(t, "telegram limit 2", deliveryIDs(must(s.PendingDeliveries(ctx(t), "telegram:dm:1", 2))),
			[]int64{ds[0].ID, ds[2].ID})
		eqIDs(t, "all limit 3", deliveryIDs(must(s.PendingDeliveries(ctx(t), "", 3))),
			[]int64{ds[0].ID, ds[1].ID, ds[2].ID})
		eq(t, "unknown address", len(must(s.PendingDeliveries(ctx(t), "slack:dm:9", 0))), 0)
		noErr(t, s.MarkDelivered(ctx(t), ds[0].ID, "m"))
		eqIDs(t, "telegram after send", deliveryIDs(must(s.PendingDeliveries(ctx(t), "telegram:dm:1", 0))),
			[]int64{ds[2].ID, ds[4].ID})
	},
	"WaitingDeliveriesPerAddress": func(t *testing.T, s store.Store) {
		eq(t, "nothing waits", len(must(s.WaitingDeliveries(ctx(t)))), 0)
		ds := must(s.EnqueueDeliveries(ctx(t),
			delivery("a1", "telegram:dm:1", "x"),
			delivery("b1", "discord:thread:2", "x"),
			delivery("a2", "telegram:dm:1", "x"),
			delivery("c1", "web:thread:3", "x")))
		noErr(t, s.MarkDelivered(ctx(t), ds[0].ID, "m"))
		noErr(t, s.AbandonDelivery(ctx(t), ds[3].ID, "gone"))
		w := must(s.WaitingDeliveries(ctx(t)))
		eq(t, "addresses waiting", len(w), 2)
		eq(t, "telegram waiting", w["telegram:dm:1"], 1)
		eq(t, "discord waiting", w["discord:thread:2"], 1)
	},
	"DeliveryByKey": func(t *testing.T, s store.Store) {
		_, err := s.DeliveryByKey(ctx(t), "in:1:part:0")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.DeliveryByKey(ctx(t), "")
		wantErr(t, err, store.ErrNotFound)
		d := must(s.EnqueueDeliveries(ctx(t), delivery("in:1:part:0", "web:dm:main", "hello")))[0]
		noErr(t, s.MarkDelivered(ctx(t), d.ID, "m1"))
		got := must(s.DeliveryByKey(ctx(t), "in:1:part:0"))
		eq(t, "id", got.ID, d.ID)
		eq(t, "text", got.Text, "hello")
		eq(t, "sent", got.SentAt.IsZero(), false)
	},
	"MarkDeliveredOnce": func(t *testing.T, s store.Store) {
		d := must(s.EnqueueDeliveries(ctx(t), delivery("k", "web:thread:1", "x")))[0]
		before := time.Now().Add(-time.Second)
		noErr(t, s.MarkDelivered(ctx(t), d.ID, "platform-7"))
		eq(t, "pending", len(must(s.PendingDeliveries(ctx(t), "", 0))), 0)
		sent := storedDelivery(t, s, "k")
		eq(t, "platform id", sent.PlatformMsgID, "platform-7")
		if sent.SentAt.Before(before) {
			t.Fatalf("sent at %v, want about now", sent.SentAt)
		}
		// Marking again (a retried mark after a lost answer) keeps the first send.
		noErr(t, s.MarkDelivered(ctx(t), d.ID, "platform-8"))
		again := storedDelivery(t, s, "k")
		eq(t, "platform id after second mark", again.PlatformMsgID, "platform-7")
		if !again.SentAt.Equal(sent.SentAt) {
			t.Fatalf("sent at moved from %v to %v", sent.SentAt, again.SentAt)
		}
		wantErr(t, s.MarkDelivered(ctx(t), d.ID+1000, "x"), store.ErrNotFound)
	},
	"AbandonedDeliveryStopsBlocking": func(t *testing.T, s store.Store) {
		ds := must(s.EnqueueDeliveries(ctx(t), delivery("a", "telegram:dm:1", "first"), delivery("b", "telegram:dm:1", "second")))
		noErr(t, s.AbandonDelivery(ctx(t), ds[0].ID, "chat not found"))
		p := must(s.PendingDeliveries(ctx(t), "telegram:dm:1", 0))
		if len(p) != 1 || p[0].Key != "b" {
			t.Fatalf("pending after abandoning the first: %+v", p)
		}
		got := storedDelivery(t, s, "a")
		if !got.Abandoned || got.LastError != "chat not found" || got.SentAt.IsZero() || got.PlatformMsgID != "" {
			t.Fatalf("abandoned delivery %+v", got)
		}
		// A sent delivery cannot be abandoned afterwards.
		noErr(t, s.MarkDelivered(ctx(t), ds[1].ID, "m2"))
		noErr(t, s.AbandonDelivery(ctx(t), ds[1].ID, "late"))
		if got := storedDelivery(t, s, "b"); got.Abandoned || got.LastError != "" || got.PlatformMsgID != "m2" {
			t.Fatalf("a sent delivery was abandoned: %+v", got)
		}
		// Re-enqueueing an abandoned key does not bring it back.
		again := must(s.EnqueueDeliveries(ctx(t), delivery("a", "telegram:dm:1", "first")))
		if !again[0].Abandoned || len(must(s.PendingDeliveries(ctx(t), "", 0))) != 0 {
			t.Fatalf("re-enqueued abandoned key: %+v", again[0])
		}
		wantErr(t, s.AbandonDelivery(ctx(t), ds[1].ID+1000, "x"), store.ErrNotFound)
	},
	"DeliveryFailuresAreCounted": func(t *testing.T, s store.Store) {
		d := must(s.EnqueueDeliveries(ctx(t), delivery("k", "web:thread:1", "x")))[0]
		noErr(t, s.RecordDeliveryFailure(ctx(t), d.ID, "timeout"))
		long := strings.Repeat("é", store.MaxHandoffError) // 2 bytes each
		noErr(t, s.RecordDeliveryFailure(ctx(t), d.ID, long))
		p := must(s.PendingDeliveries(ctx(t), "", 0))
		eq(t, "still pending", len(p), 1)
		eq(t, "attempts", p[0].Attempts, 2)
		if len(p[0].LastError) > store.MaxHandoffError || !utf8.ValidString(p[0].LastError) ||
			!strings.HasPrefix(long, p[0].LastError) || len(p[0].LastError) < store.MaxHandoffError-1 {
			t.Fatalf("last error %d bytes, valid %v: not cut on a character boundary at %d",
				len(p[0].LastError), utf8.ValidString(p[0].LastError), store.MaxHandoffError)
		}
		// A late failure report after a success changes nothing.
		noErr(t, s.MarkDelivered(ctx(t), d.ID, "m"))
		noErr(t, s.RecordDeliveryFailure(ctx(t), d.ID, "late"))
		got := storedDelivery(t, s, "k")
		eq(t, "attempts after late failure", got.Attempts, 2)
		eq(t, "error after late failure", got.LastError, p[0].LastError)
		if got.SentAt.IsZero() {
			t.Fatal("late failure unsent the delivery")
		}
		wantErr(t, s.RecordDeliveryFailure(ctx(t), d.ID+1000, "x"), store.ErrNotFound)
	},
}

var homeTests = map[string]func(*testing.T, store.Store){
	"SetReplaceAndClear": func(t *testing.T, s store.Store) {
		eq(t, "none at first", len(must(s.HomeChannels(ctx(t)))), 0)
		noErr(t, s.SetHomeChannel(ctx(t), "telegram", "telegram:group:-100777"))
		noErr(t, s.SetHomeChannel(ctx(t), "discord", "discord:channel:5"))
		h := must(s.HomeChannels(ctx(t)))
		eq(t, "count", len(h), 2)
		eq(t, "telegram", h["telegram"], "telegram:group:-100777")
		eq(t, "discord", h["discord"], "discord:channel:5")
		noErr(t, s.SetHomeChannel(ctx(t), "telegram", "telegram:group:-100888"))
		eq(t, "replaced", must(s.HomeChannels(ctx(t)))["telegram"], "telegram:group:-100888")
		noErr(t, s.SetHomeChannel(ctx(t), "discord", ""))
		h = must(s.HomeChannels(ctx(t)))
		if _, ok := h["discord"]; ok || len(h) != 1 {
			t.Fatalf("after clearing discord: %v", h)
		}
		noErr(t, s.SetHomeChannel(ctx(t), "slack", "")) // clearing an unset home is fine
		wantErr(t, s.SetHomeChannel(ctx(t), "", "x"), store.ErrInvalid)
	},
}

var platformStateTests = map[string]func(*testing.T, store.Store){
	"SetReplaceAndClear": func(t *testing.T, s store.Store) {
		eq(t, "none at first", must(s.PlatformState(ctx(t), "matrix", "since")), "")
		noErr(t, s.SetPlatformState(ctx(t), "matrix", "since", "s72594_4483_1934"))
		noErr(t, s.SetPlatformState(ctx(t), "matrix", "filter", "f1"))
		noErr(t, s.SetPlatformState(ctx(t), "slack", "since", "other"))
		eq(t, "stored", must(s.PlatformState(ctx(t), "matrix", "since")), "s72594_4483_1934")
		eq(t, "another key", must(s.PlatformState(ctx(t), "matrix", "filter")), "f1")
		eq(t, "another platform", must(s.PlatformState(ctx(t), "slack", "since")), "other")
		noErr(t, s.SetPlatformState(ctx(t), "matrix", "since", "s72600_4490_1934"))
		eq(t, "replaced", must(s.PlatformState(ctx(t), "matrix", "since")), "s72600_4490_1934")
		noErr(t, s.SetPlatformState(ctx(t), "matrix", "filter", ""))
		eq(t, "cleared", must(s.PlatformState(ctx(t), "matrix", "filter")), "")
		eq(t, "others kept", must(s.PlatformState(ctx(t), "slack", "since")), "other")
		noErr(t, s.SetPlatformState(ctx(t), "matrix", "never", "")) // clearing an unset key is fine
		wantErr(t, s.SetPlatformState(ctx(t), "", "k", "v"), store.ErrInvalid)
		wantErr(t, s.SetPlatformState(ctx(t), "matrix", "", "v"), store.ErrInvalid)
	},
}

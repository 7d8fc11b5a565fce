package imessage

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// Whatever is POSTed to the webhook with the right secret, the listener
// never panics, answers a status a sender can act on, and hands over only
// events with an address and a sender.
func FuzzWebhook(f *testing.F) {
	f.Add([]byte(`{"type":"new-message","data":{"guid":"g1","text":"hi","isFromMe":false,"handle":{"address":"+15550001111"},"chats":[{"guid":"iMessage;-;+15550001111","chatIdentifier":"+15550001111"}]}}`))
	f.Add([]byte(`{"type":"updated-message","data":{}}`))
	f.Add([]byte(`{"type":"new-message","data":{"guid":""}}`))
	f.Add([]byte(`{"type":"new-message","data":null}`))
	f.Add([]byte(`not json`))
	a, err := New(Config{URL: "http://127.0.0.1:1", Password: "pw", Listen: "127.0.0.1:0", WebhookSecret: "s"})
	if err != nil {
		f.Fatal(err)
	}
	var bad *platform.Event
	h := a.webhook(platform.ReceiverFunc(func(_ context.Context, ev platform.Event) error {
		if ev.At.Platform != Name || ev.At.Key() == "" || ev.SenderID == "" {
			bad = &ev
		}
		return nil
	}), make(chan error, 1))
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath+"?secret=s", bytes.NewReader(body)))
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusServiceUnavailable:
		default:
			t.Fatalf("answered %d to %q", rec.Code, body)
		}
		if bad != nil {
			t.Fatalf("handed over %+v for %q", *bad, body)
		}
	})
}

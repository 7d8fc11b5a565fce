package control_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/store"
)

// A step goes through the store whole, but never a link that may carry
// a secret (the web chat's token), and never over a signal's bound.
func TestProgressPayload(t *testing.T) {
	for _, c := range []struct {
		link, want string
	}{
		{"https://t.me/c/777/42", "https://t.me/c/777/42"},
		{"http://127.0.0.1:7878/#token=secret", ""},
		{"http://127.0.0.1:7878/?t=secret", ""},
	} {
		p := control.Progress{HandoffID: 7, State: "completed", Step: "completed", Destination: "telegram:thread:-100777:42", Link: c.link}
		got, err := control.ParseProgress(control.ProgressPayload(p))
		if err != nil {
			t.Fatal(err)
		}
		p.Link = c.want
		if got != p {
			t.Errorf("link %q: carried %+v, want %+v", c.link, got, p)
		}
	}
	long := control.Progress{HandoffID: 8, State: "running", Step: strings.Repeat("é", store.MaxSignalPayload), Error: strings.Repeat("x", 2*store.MaxHandoffError)}
	payload := control.ProgressPayload(long)
	if len(payload) > store.MaxSignalPayload {
		t.Fatalf("payload of %d bytes, over %d", len(payload), store.MaxSignalPayload)
	}
	if got, err := control.ParseProgress(payload); err != nil || got.HandoffID != 8 || len(got.Error) != store.MaxHandoffError {
		t.Fatalf("a long step: %+v %v", got, err)
	}
}

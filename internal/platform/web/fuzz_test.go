package web

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// Whatever a page sends, the adapter answers with frames and hands the
// gateway only well-formed, bounded messages for web conversations.
func FuzzFrame(f *testing.F) {
	for _, s := range []string{`{"type":"list"}`, `{"type":"open","key":"web:dm:main"}`, `{"type":"new"}`,
		`{"type":"say","key":"web:dm:main","text":"hi","id":"1"}`, `{"type":"say","key":"telegram:dm:1","text":"x","id":"2"}`,
		`{"type":"say","key":"web:thread:main:%zz","text":"x","id":"3"}`, `{"type":"open","key":":::"}`, `{"type":"say","text":"0\u0000"}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var f frame
		if json.Unmarshal(data, &f) != nil {
			return
		}
		var got []platform.Event
		a := &Adapter{cfg: Config{Transcripts: staticTranscripts{}}, clients: map[*client]bool{},
			askers: map[string]string{}, missed: map[string][]frame{}, questions: map[string]frame{},
			recv: platform.ReceiverFunc(func(_ context.Context, ev platform.Event) error { got = append(got, ev); return nil })}
		c := &client{tab: "t1", out: make(chan frame, 8)}
		a.serveFrame(context.Background(), c, f)
		for _, ev := range got {
			if ev.At.Platform != Name || len(ev.ID) > MaxID || ev.ID == "" || len(ev.Text) > MaxText || ev.At.Key() != f.Key {
				t.Fatalf("frame %s handed on %+v", data, ev)
			}
		}
		if len(c.out) == 0 {
			t.Fatalf("frame %s got no answer", data)
		}
	})
}

package matrix

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform/safehtml/safehtmltest"
)

// Rendering any markdown to Matrix HTML never panics, keeps valid text
// valid, and never lets raw HTML from the reply through as markup.
func FuzzRenderHTML(f *testing.F) {
	for _, s := range []string{"**bold** and `code`", "- a\n- b", "<script>alert(1)</script>", "[x](javascript:alert(1))", "```\n<b>\n```", "plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out, _ := renderHTML(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("valid markdown %q rendered as invalid UTF-8", md)
		}
		if strings.Contains(strings.ToLower(out), "<script") {
			t.Fatalf("markdown %q let a script tag through: %q", md, out)
		}
	})
}

// Any room event the homeserver hands over decodes without panicking;
// what is handed to the gateway is a text message from someone other
// than the bot, with its event id, its room and some text.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"m.room.message","event_id":"$e1","sender":"@owner:hs","origin_server_ts":1,"content":{"msgtype":"m.text","body":"hello"}}`,
		`{"type":"m.room.message","event_id":"$e2","sender":"@owner:hs","content":{"msgtype":"m.emote","body":"waves"}}`,
		`{"type":"m.room.message","event_id":"$e3","sender":"@owner:hs","content":{"msgtype":"m.text","body":"> <@x:hs> quoted\n\nreply","m.relates_to":{"m.in_reply_to":{"event_id":"$e1"}}}}`,
		`{"type":"m.room.message","event_id":"$e4","sender":"@owner:hs","content":{"msgtype":"m.text","body":"in a thread","m.relates_to":{"rel_type":"m.thread","event_id":"$root"}}}`,
		`{"type":"m.room.message","event_id":"$e5","sender":"@baton:hs","content":{"msgtype":"m.text","body":"my own"}}`,
		`{"type":"m.room.message","event_id":"$e6","sender":"@owner:hs","content":{"msgtype":"m.text","body":"edit","m.relates_to":{"rel_type":"m.replace","event_id":"$e1"}}}`,
		`{"type":"m.room.message","event_id":"$e7","sender":"@owner:hs","content":"not an object"}`,
		`{}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	a, err := New(Config{HomeserverURL: "http://127.0.0.1:1", AccessToken: "t", UserID: "@baton:hs"})
	if err != nil {
		f.Fatal(err)
	}
	a.me = "@baton:hs"
	const room = "!room:hs"
	f.Fuzz(func(t *testing.T, raw []byte) {
		var w wireEvent
		if json.Unmarshal(raw, &w) != nil {
			return
		}
		ev, ok := a.decode(room, w)
		if !ok {
			return
		}
		if ev.ID == "" || ev.ID != w.EventID || ev.SenderID == "" || ev.SenderID == a.UserID() {
			t.Fatalf("event %s handed over as %+v", raw, ev)
		}
		if ev.At.Platform != Name || ev.At.Chat != room || strings.TrimSpace(ev.Text) == "" {
			t.Fatalf("event %s handed over at %+v with text %q", raw, ev.At, ev.Text)
		}
	})
}

// Whatever the agent writes renders to what Matrix allows in a formatted
// body only.
func FuzzRenderHTMLAllowed(f *testing.F) {
	for _, s := range safehtmltest.Hostile() {
		f.Add(s)
	}
	f.Add("# Head\n\n- a\n- b\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n\n![i](https://x.y/p.png \"t\")")
	f.Fuzz(func(t *testing.T, md string) {
		out, _ := renderHTML(md)
		if why := matrixAllowed.Unsafe(out); why != "" {
			t.Fatalf("%q rendered with %s", md, why)
		}
	})
}

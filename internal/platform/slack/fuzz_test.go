package slack

import (
	"testing"
	"unicode/utf8"
)

// Whatever Slack (or something pretending to be it) sends, decoding never
// panics, and an event it hands over has an address and a sender.
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"type":"event_callback","event":{"type":"message","channel":"D1","user":"U1","text":"hi","ts":"1.1"}}`), "UBOT")
	f.Add([]byte(`{"type":"event_callback","event":{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT> /handoff cli","ts":"1.2","thread_ts":"1.0"}}`), "UBOT")
	f.Add([]byte(`{"type":"event_callback","event":{"type":"message","subtype":"message_changed","channel":"C1"}}`), "UBOT")
	f.Add([]byte(`{"type":"event_callback","event":{"type":"message","subtype":"file_share","channel":"C1","user":"U1","text":"","ts":"1.3","files":[{"id":"F1","name":"a.pdf","mimetype":"application/pdf","size":4,"mode":"hosted","url_private_download":"https://files.slack.com/files-pri/T-F1/download/a.pdf"},{"id":"F2","mode":"tombstone"}]}}`), "UBOT")
	f.Add([]byte(`{"type":"event_callback","event":null}`), "")
	f.Add([]byte(`[]`), "U")
	f.Fuzz(func(t *testing.T, raw []byte, bot string) {
		ev, ok, err := decodeEvent(raw, bot, nil)
		if err != nil || !ok {
			return
		}
		if ev.At.Platform != Name || ev.At.Key() == "" {
			t.Fatalf("handed over an event without an address: %+v", ev)
		}
		if ev.SenderID == bot && bot != "" {
			t.Fatalf("the bot's own message was handed over: %+v", ev)
		}
		for _, att := range ev.Attachments {
			if att.ID == "" {
				t.Fatalf("a file without its id was handed over: %+v", ev)
			}
		}
	})
}

// Rendering any markdown to mrkdwn never panics and keeps valid text valid.
func FuzzRenderMrkdwn(f *testing.F) {
	for _, s := range []string{"**bold** and `code`", "- a\n- b\n\n1. c", "[link](https://example.com) <script>", "```go\nx := 1\n```", "> quote\n\n# Heading", "\\*not bold\\*", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := renderMrkdwn(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("valid markdown %q rendered as invalid UTF-8 %q", md, out)
		}
	})
}

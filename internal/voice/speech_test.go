package voice_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/voice"
)

// An answer is spoken as Opus, its code blocks and tables named rather
// than read, links read by their words.
func TestSpeakReadsTheWordsOnly(t *testing.T) {
	srv := llmtest.Start(t)
	sp, err := voice.NewSpeaker(voice.SpeechConfig{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	md := "Here is **the fix**, see [the docs](https://example.com):\n\n```go\nfmt.Println(1)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone."
	audio, err := sp.Speak(context.Background(), md)
	if err != nil || !bytes.Equal(audio, llmtest.VoiceNote(time.Second)) {
		t.Fatalf("%d bytes, %v", len(audio), err)
	}
	reqs := srv.Speeches()
	if len(reqs) != 1 || reqs[0].Format != "opus" || reqs[0].Model != voice.DefaultSpeechModel || reqs[0].Voice != voice.DefaultSpeaker {
		t.Fatalf("requests %+v", reqs)
	}
	in := reqs[0].Input
	for _, bad := range []string{"fmt.Println", "| a |", "https://", "**", "```"} {
		if strings.Contains(in, bad) {
			t.Errorf("read aloud %q:\n%s", bad, in)
		}
	}
	for _, want := range []string{"Here is the fix, see the docs", "a code block here", "a table here", "Done."} {
		if !strings.Contains(in, want) {
			t.Errorf("not read %q:\n%s", want, in)
		}
	}
}

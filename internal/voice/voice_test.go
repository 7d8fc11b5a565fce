package voice_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/voice"
)

func opener(data []byte) func(context.Context) (io.ReadCloser, error) {
	return func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}

// The note goes as it was recorded, named for its format, with the model,
// language and key; what comes back is the transcript.
func TestTranscribeSendsTheNoteAsItIs(t *testing.T) {
	srv := llmtest.Start(t)
	srv.SetTranscriber(func(tr llmtest.Transcription) llmtest.Step { return llmtest.Reply{Text: " buy milk and eggs \n"} })
	tr, err := voice.New(voice.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	ogg := append([]byte("OggS"), bytes.Repeat([]byte{1, 2, 3}, 5000)...)
	text, err := tr.Transcribe(context.Background(), "", "audio/ogg", opener(ogg))
	if err != nil || text != "buy milk and eggs" {
		t.Fatalf("%q, %v", text, err)
	}
	got := srv.Transcriptions()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if !bytes.Equal(r.Data, ogg) || r.Filename != "voice.ogg" || r.MediaType != "audio/ogg" || r.Model != voice.DefaultModel || r.Language != "en" || r.Auth != "Bearer k" {
		t.Errorf("request %+v (%d bytes)", r, len(r.Data))
	}
}

// A rate limit is tried again after what the service asked; a refusal is
// not, and says what the service said.
func TestTranscribeFailuresClassified(t *testing.T) {
	srv := llmtest.Start(t)
	n := 0
	srv.SetTranscriber(func(llmtest.Transcription) llmtest.Step {
		n++
		if n == 1 {
			return llmtest.Fail{Status: 429, RetryAfter: "2"}
		}
		return llmtest.Reply{Text: "second try"}
	})
	var waited []time.Duration
	tr, err := voice.New(voice.Config{BaseURL: srv.URL + "/v1", Retry: llm.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		waited = append(waited, d)
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if text, err := tr.Transcribe(context.Background(), "n.ogg", "audio/ogg", opener([]byte("OggS"))); err != nil || text != "second try" {
		t.Fatalf("%q, %v", text, err)
	}
	if len(waited) != 1 || waited[0] != 2*time.Second {
		t.Errorf("waited %v, want the 2 s the service asked", waited)
	}
	srv.SetTranscriber(func(llmtest.Transcription) llmtest.Step { return llmtest.Fail{Status: 401} })
	_, err = tr.Transcribe(context.Background(), "n.ogg", "audio/ogg", opener([]byte("OggS")))
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("a refused key: %v", err)
	}
	if _, err := voice.New(voice.Config{}); !errors.Is(err, voice.ErrNotConfigured) {
		t.Errorf("no base URL: %v", err)
	}
}

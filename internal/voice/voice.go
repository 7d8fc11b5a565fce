// Package voice hears voice notes: it sends a note's audio to an
// OpenAI-compatible /audio/transcriptions endpoint (OpenAI, Groq, a local
// whisper.cpp or faster-whisper server) and returns what was said. The
// audio goes as the service recorded it (Opus in Ogg for most), streamed
// from the store, never transcoded.
package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/formstream"
	"github.com/baton-agent/baton/internal/llm"
)

// DefaultModel is the transcription model asked for when none is set.
const DefaultModel = "whisper-1"

// ErrNotConfigured says no transcription endpoint is set up.
var ErrNotConfigured = errors.New("no transcription service is configured")

// Config is where notes are transcribed.
type Config struct {
	BaseURL  string // ending in /v1 for OpenAI ("https://api.openai.com/v1")
	Model    string // "" means DefaultModel
	APIKey   string // sent as a bearer token; "" for a local server without one
	Language string // ISO-639-1 hint ("en"); "" lets the service detect it
	// Timeout bounds one request; 0: two minutes (a long note on a slow
	// local server).
	Timeout    time.Duration
	HTTPClient *http.Client // nil: http.DefaultClient
	// Retry is how a rate limit or a server error is tried again (the
	// model's policy, llm.RetryPolicy).
	Retry llm.RetryPolicy
}

// Transcriber transcribes voice notes. Its methods are safe for concurrent
// use.
type Transcriber struct {
	cfg Config
}

// New returns a Transcriber, or ErrNotConfigured without a base URL.
func New(cfg Config) (*Transcriber, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" {
		return nil, ErrNotConfigured
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("voice.base_url %q is not an absolute URL", cfg.BaseURL)
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &Transcriber{cfg: cfg}, nil
}

// Transcribe returns what is said in the audio open reads (name and
// mediaType as the store keeps them), under the retry policy. Failures
// are *llm.APIError, classified as a model's are.
func (t *Transcriber) Transcribe(ctx context.Context, name, mediaType string, open func(context.Context) (io.ReadCloser, error)) (string, error) {
	var text string
	err := llm.Retry(ctx, t.cfg.Retry, func(ctx context.Context) error {
		var err error
		text, err = t.once(ctx, name, mediaType, open)
		return err
	})
	return text, err
}

// once is one request: the audio streamed as a multipart upload.
func (t *Transcriber) once(ctx context.Context, name, mediaType string, open func(context.Context) (io.ReadCloser, error)) (string, error) {
	src, err := open(ctx)
	if err != nil {
		return "", fmt.Errorf("read the voice note: %w", err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	form, contentType := formstream.New(formstream.Field("model", t.cfg.Model), formstream.Field("language", t.cfg.Language),
		formstream.Field("response_format", "json"),
		formstream.Part{Name: "file", Filename: uploadName(name, mediaType), MediaType: mediaType, Body: src})
	defer form.Close() // the writer stops if the request ended early
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.cfg.BaseURL+"/audio/transcriptions", form)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", contentType)
	if t.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	}
	resp, err := t.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", &llm.APIError{Provider: "transcription", Message: err.Error(), Kind: llm.ErrServer}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", &llm.APIError{Provider: "transcription", Message: "read the answer: " + err.Error(), Kind: llm.ErrServer}
	}
	if resp.StatusCode >= 400 {
		return "", llm.StatusError("transcription", resp.StatusCode, resp.Header, body)
	}
	var out struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return "", &llm.APIError{Provider: "transcription", Status: resp.StatusCode, Message: "the answer is not JSON with a text", Kind: llm.ErrBadRequest}
	}
	return strings.TrimSpace(out.Text), nil
}

// uploadName is a name the endpoint reads the format from: its extension
// says the container (whisper servers go by it).
func uploadName(name, mediaType string) string {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' || r == '\\' || r == '/' {
			return '_'
		}
		return r
	}, name)
	if strings.Contains(name, ".") {
		return name
	}
	if name == "" {
		name = "voice"
	}
	switch strings.SplitN(mediaType, ";", 2)[0] {
	case "audio/ogg", "audio/opus":
		return name + ".ogg"
	case "audio/mpeg":
		return name + ".mp3"
	case "audio/mp4", "audio/m4a", "audio/x-m4a":
		return name + ".m4a"
	case "video/mp4": // an .m4a sniffs as an MP4 container
		return name + ".mp4"
	case "audio/aac":
		return name + ".aac"
	case "audio/wav", "audio/x-wav":
		return name + ".wav"
	case "audio/webm":
		return name + ".webm"
	}
	return name + ".ogg"
}

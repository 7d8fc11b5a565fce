package voice

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/llm"
)

// Speech defaults: OpenAI's names.
const (
	DefaultSpeechModel = "tts-1"
	DefaultSpeaker     = "alloy"
)

// maxSpoken bounds the text read aloud: an endpoint takes 4096 characters.
const maxSpoken = 4000

// maxSpeech bounds the audio an answer comes back as.
const maxSpeech = 25 << 20

// SpeechConfig is where answers are spoken.
type SpeechConfig struct {
	BaseURL    string
	Model      string // "" means DefaultSpeechModel
	Voice      string // the speaker; "" means DefaultSpeaker
	APIKey     string
	Timeout    time.Duration // 0: one minute
	HTTPClient *http.Client
	Retry      llm.RetryPolicy
}

// Speaker speaks answers through an OpenAI-compatible /audio/speech
// endpoint, as Opus in Ogg: what Telegram and WhatsApp take as a voice
// message.
type Speaker struct {
	cfg SpeechConfig
}

// NewSpeaker returns a Speaker, or ErrNotConfigured without a base URL.
func NewSpeaker(cfg SpeechConfig) (*Speaker, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" {
		return nil, ErrNotConfigured
	}
	if cfg.Model == "" {
		cfg.Model = DefaultSpeechModel
	}
	if cfg.Voice == "" {
		cfg.Voice = DefaultSpeaker
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &Speaker{cfg: cfg}, nil
}

// Speak returns markdown read aloud as Ogg Opus (Spoken decides what is
// read), under the retry policy.
func (s *Speaker) Speak(ctx context.Context, markdown string) ([]byte, error) {
	text := Spoken(markdown)
	var audio []byte
	err := llm.Retry(ctx, s.cfg.Retry, func(ctx context.Context) error {
		var err error
		audio, err = s.once(ctx, text)
		return err
	})
	return audio, err
}

func (s *Speaker) once(ctx context.Context, text string) ([]byte, error) {
	body, _ := json.Marshal(map[string]string{"model": s.cfg.Model, "input": text, "voice": s.cfg.Voice, "response_format": "opus"})
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.BaseURL+"/audio/speech", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.APIKey)
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, &llm.APIError{Provider: "speech", Message: err.Error(), Kind: llm.ErrServer}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSpeech+1))
	if err != nil {
		return nil, &llm.APIError{Provider: "speech", Message: "read the audio: " + err.Error(), Kind: llm.ErrServer}
	}
	if resp.StatusCode >= 400 {
		return nil, llm.StatusError("speech", resp.StatusCode, resp.Header, data)
	}
	if len(data) > maxSpeech {
		return nil, &llm.APIError{Provider: "speech", Message: fmt.Sprintf("the audio is over %d bytes", maxSpeech), Kind: llm.ErrBadRequest}
	}
	return data, nil
}

var (
	fenceRE  = regexp.MustCompile("(?s)```.*?(```|$)|~~~.*?(~~~|$)")
	tableRE  = regexp.MustCompile(`(?m)(^\s*\|.*\|\s*\n?){2,}`)
	linkRE   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	markRE   = regexp.MustCompile("[*_`#>]+")
	blanksRE = regexp.MustCompile(`\n{3,}`)
)

// Spoken is what of markdown is read aloud: code blocks and tables are
// named in a sentence (they are in the text sent beside), links read by
// their words, markup dropped, cut to what an endpoint takes.
func Spoken(markdown string) string {
	s := fenceRE.ReplaceAllString(markdown, "\n(There is a code block here; it is in the text.)\n")
	s = tableRE.ReplaceAllString(s, "(There is a table here; it is in the text.)\n")
	s = linkRE.ReplaceAllString(s, "$1")
	s = markRE.ReplaceAllString(s, "")
	s = strings.TrimSpace(blanksRE.ReplaceAllString(s, "\n\n"))
	if r := []rune(s); len(r) > maxSpoken {
		s = string(r[:maxSpoken]) + "… The rest is in the text."
	}
	return s
}

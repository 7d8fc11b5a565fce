// Package llm is baton's seam to model providers: one streaming chat call
// with tools, implemented for OpenAI-compatible servers and Anthropic, plus an
// offline responder for machines with no model configured.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role of a message in a transcript sent to a model.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one transcript entry as a provider sees it.
type Message struct {
	Role    Role
	Content string
	// Parts are what a user turn carries besides its text: images,
	// documents, inlined files. Providers send them in their own shape,
	// before Content (images first, then what is asked about them); other
	// roles ignore them.
	Parts      []Part
	ToolCalls  []ToolCall // assistant messages that call tools
	ToolCallID string     // tool results: the call they answer
	ToolName   string     // tool results: the tool that ran
}

// PartKind says how a provider sends a Part.
type PartKind string

const (
	PartText     PartKind = "text"     // Text, sent as text
	PartImage    PartKind = "image"    // Data is an image of MediaType
	PartDocument PartKind = "document" // Data is a PDF (MediaType application/pdf)
)

// Part is one piece of a user turn beyond its text. Bytes are held whole:
// images reach a provider already scaled (imagefit), and a PDF is sent whole
// anyway, base64 in the JSON body.
type Part struct {
	Kind      PartKind
	Text      string // PartText: the text; image/document: the one line said instead where the model cannot take the bytes
	Name      string // file name, for a document's title and the one-line fallback
	MediaType string // sniffed from the bytes: image/jpeg, image/png, application/pdf, …
	Data      []byte
}

// Describe is the line a model gets in place of a part it cannot take.
func (p Part) Describe() string {
	if p.Text != "" {
		return p.Text
	}
	name := p.Name
	if name == "" {
		name = "unnamed"
	}
	return fmt.Sprintf("[attached %s: %s, %s, %d bytes — not shown to this model]", p.Kind, name, p.MediaType, len(p.Data))
}

// ToolCall is the model asking for one tool to run.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object; "{}" when the model sent none
}

// Tool describes a tool the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// Request is one chat turn sent to a model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int // 0: the provider's default
}

// Usage counts tokens for one call.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Response is a complete model answer, assembled from the stream.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	Usage      Usage
	StopReason string // "stop", "tool_calls", "length", … as the provider said
}

// Delta is a piece of streamed output, handed to the caller as it arrives.
type Delta struct {
	Text string
}

// Provider runs one streaming chat call. onDelta may be nil; it is called
// from the calling goroutine, in order, before Chat returns.
type Provider interface {
	Name() string
	Chat(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// Prefiller is the optional part of a Provider that can continue an
// answer: a request ending in an assistant message has the model go on
// from its last word (Anthropic's prefill). OpenAI-style chat completions
// cannot; they answer such a request anew.
type Prefiller interface {
	Prefills() bool
}

// CanPrefill reports whether p continues a request's trailing assistant
// message rather than answering it anew; a provider that does not say
// cannot.
func CanPrefill(p Provider) bool {
	pf, ok := p.(Prefiller)
	return ok && pf.Prefills()
}

// Seer is the optional part of a Provider that says whether a model takes
// image input. A provider that does not say is taken to see images.
type Seer interface {
	SeesImages(model string) bool
}

// SeesImages reports whether model on p takes image parts; where it does
// not, the caller sends each image's one-line description instead and tells
// the person once.
func SeesImages(p Provider, model string) bool {
	s, ok := p.(Seer)
	return !ok || s.SeesImages(model)
}

// ImageSizer is the optional part of a Provider that names the longest
// image side its models use; larger images are scaled down to it.
type ImageSizer interface {
	MaxImageSide() int
}

// DefaultMaxImageSide is the long-side bound for a provider that names none.
const DefaultMaxImageSide = 2048

// MaxImageSide is the longest side, in pixels, an image for p may have.
func MaxImageSide(p Provider) int {
	if s, ok := p.(ImageSizer); ok && s.MaxImageSide() > 0 {
		return s.MaxImageSide()
	}
	return DefaultMaxImageSide
}

// Sentinel errors callers branch on; an *APIError wraps one of them.
var (
	ErrAuth        = errors.New("model provider rejected the credentials")
	ErrRateLimited = errors.New("model provider rate limit")
	ErrServer      = errors.New("model provider server error")
	ErrBadRequest  = errors.New("model provider rejected the request")
	ErrStream      = errors.New("model stream broke off")
)

// APIError is a provider failure with what a person needs to act on it.
type APIError struct {
	Provider   string
	Status     int           // HTTP status, 0 for transport/stream errors
	Message    string        // the provider's own words, if any
	RetryAfter time.Duration // from Retry-After, if sent
	Kind       error         // one of the sentinels above
}

func (e *APIError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Provider, e.Message)
}

func (e *APIError) Unwrap() error { return e.Kind }

// Package anthropic is the llm.Provider for Anthropic's messages API.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/blob"
	"github.com/baton-agent/baton/internal/llm/imagefit"
)

// DefaultBaseURL is Anthropic's endpoint; the SDK appends /v1/messages.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is sent when Request.MaxTokens is 0: the API requires
// max_tokens on every call.
const DefaultMaxTokens = 4096

// Config selects the server and model. Nothing is read from the
// environment: callers resolve configuration and pass it here.
type Config struct {
	Name       string       // Name() and label in errors; "" means "anthropic"
	BaseURL    string       // "" means DefaultBaseURL
	APIKey     string       // sent as x-api-key
	Model      string       // used when Request.Model is empty
	HTTPClient *http.Client // nil: the SDK's default client
}

// Provider talks to the Anthropic messages API.
type Provider struct {
	name     string
	baseURL  string
	model    string
	messages sdk.MessageService // not sdk.Client: that builds every service of the API, and links them in
	fitted   *imagefit.Cache    // images fitted for earlier turns
}

var _ llm.Provider = (*Provider)(nil)
var _ llm.Prefiller = (*Provider)(nil)
var _ llm.ImageSizer = (*Provider)(nil)

// MaxImageSide is the long edge Anthropic recommends: larger images are
// scaled down on their side anyway, after costing the upload and latency.
const MaxImageSide = 1568

// New builds a provider. Environment defaults are switched off and base
// URL, key and retries set explicitly: the SDK would otherwise pick up
// ANTHROPIC_* variables and profiles and retry on its own, and retrying is
// llm.WithRetry's job.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		cfg.Name = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an absolute URL", cfg.Name, cfg.BaseURL)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{name: cfg.Name, baseURL: cfg.BaseURL, model: cfg.Model, messages: sdk.NewMessageService(opts...), fitted: imagefit.NewCache(0)}, nil
}

// Name is the configured label, "anthropic" by default.
func (p *Provider) Name() string { return p.name }

// Prefills: a request ending in an assistant message is continued from
// its last word.
func (p *Provider) Prefills() bool { return true }

// MaxImageSide: images are scaled to Anthropic's recommended long edge.
func (p *Provider) MaxImageSide() int { return MaxImageSide }

// Chat streams one message, handing text pieces to onDelta as they come.
func (p *Provider) Chat(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	blobs := blob.New()
	params, err := p.params(req, blobs)
	if err != nil {
		return llm.Response{}, err
	}
	var httpResp *http.Response
	stream := p.messages.NewStreaming(ctx, params, option.WithResponseInto(&httpResp),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			if err := blobs.Swap(r); err != nil {
				return nil, err
			}
			return next(r)
		}))
	defer func() { _ = stream.Close() }()

	var msg sdk.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return llm.Response{}, &llm.APIError{Provider: p.name, Message: fmt.Sprintf("malformed stream: %v", err), Kind: llm.ErrStream}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" && onDelta != nil {
				onDelta(llm.Delta{Text: ev.Delta.Text})
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return llm.Response{}, p.mapError(ctx, err, httpResp)
	}
	if !stopped {
		// A clean end of body without message_stop: cut short somewhere,
		// and the answer may be incomplete.
		return llm.Response{}, &llm.APIError{Provider: p.name, Message: "stream ended before the model finished its answer", Kind: llm.ErrStream}
	}
	return response(msg), nil
}

func response(msg sdk.Message) llm.Response {
	out := llm.Response{
		StopReason: string(msg.StopReason),
		Usage: llm.Usage{
			// Cached prompt tokens are counted apart by Anthropic; the prompt
			// is all three together.
			InputTokens:  msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens,
			OutputTokens: msg.Usage.OutputTokens,
		},
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Text += b.Text
		case "tool_use":
			args := json.RawMessage(b.Input)
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	return out
}

// params is req as the SDK takes it, each image's and document's bytes a
// token of blobs (streamed into the body when it is sent).
func (p *Provider) params(req llm.Request, blobs *blob.Set) (sdk.MessageNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return sdk.MessageNewParams{}, fmt.Errorf("%s: no model named in the request or the config", p.name)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: int64(maxTokens)}
	if req.System != "" {
		params.System = append(params.System, sdk.TextBlockParam{Text: req.System})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			// The API has no system turns; extra system text joins the prompt.
			if m.Content != "" {
				params.System = append(params.System, sdk.TextBlockParam{Text: m.Content})
			}
		case llm.RoleUser:
			params.Messages = append(params.Messages, sdk.NewUserMessage(p.userBlocks(m, blobs)...))
		case llm.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" { // the API rejects empty text blocks
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			if len(blocks) == 0 {
				continue // an empty turn would be rejected and says nothing
			}
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(blocks...))
		case llm.RoleTool:
			block := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID, Content: p.resultContent(m, blobs)}
			res := sdk.ContentBlockParamUnion{OfToolResult: &block}
			// Results of one turn's calls travel together in one user message.
			if n := len(params.Messages); n > 0 && isToolResults(params.Messages[n-1]) {
				params.Messages[n-1].Content = append(params.Messages[n-1].Content, res)
			} else {
				params.Messages = append(params.Messages, sdk.NewUserMessage(res))
			}
		default:
			return sdk.MessageNewParams{}, fmt.Errorf("%s: message %d: unknown role %q", p.name, i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return sdk.MessageNewParams{}, fmt.Errorf("%s: tool %q: %w", p.name, t.Name, err)
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return params, nil
}

// userBlocks are a user turn's parts (images as image blocks, PDFs as
// document blocks, both base64) followed by its text.
func (p *Provider) userBlocks(m llm.Message, blobs *blob.Set) []sdk.ContentBlockParamUnion {
	if len(m.Parts) == 0 {
		return []sdk.ContentBlockParamUnion{sdk.NewTextBlock(m.Content)}
	}
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(m.Parts)+1)
	for _, part := range m.Parts {
		blocks = append(blocks, p.partBlock(part, blobs))
	}
	if m.Content != "" { // the API rejects empty text blocks
		blocks = append(blocks, sdk.NewTextBlock(m.Content))
	}
	return blocks
}

func (p *Provider) partBlock(part llm.Part, blobs *blob.Set) sdk.ContentBlockParamUnion {
	switch part.Kind {
	case llm.PartImage:
		data, mediaType, err := p.fitted.Fit(part.Data, MaxImageSide)
		if err != nil {
			return sdk.NewTextBlock(part.Describe()) // an image the API could not read either
		}
		return sdk.NewImageBlockBase64(mediaType, blobs.Token(data))
	case llm.PartDocument:
		if part.MediaType != "application/pdf" {
			return sdk.NewTextBlock(part.Describe())
		}
		doc := sdk.DocumentBlockParam{Source: sdk.DocumentBlockParamSourceUnion{
			OfBase64: &sdk.Base64PDFSourceParam{Data: blobs.Token(part.Data)},
		}}
		if part.Name != "" {
			doc.Title = sdk.String(part.Name)
		}
		return sdk.ContentBlockParamUnion{OfDocument: &doc}
	default:
		text := part.Text
		if text == "" {
			text = part.Describe()
		}
		return sdk.NewTextBlock(text)
	}
}

// resultContent is a tool result's text, then its parts (an MCP tool's
// pictures), which the API takes inside the result.
func (p *Provider) resultContent(m llm.Message, blobs *blob.Set) []sdk.ToolResultBlockParamContentUnion {
	var out []sdk.ToolResultBlockParamContentUnion
	if m.Content != "" { // the API rejects empty text blocks
		out = append(out, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: m.Content}})
	}
	for _, part := range m.Parts {
		switch b := p.partBlock(part, blobs); {
		case b.OfImage != nil:
			out = append(out, sdk.ToolResultBlockParamContentUnion{OfImage: b.OfImage})
		case b.OfDocument != nil:
			out = append(out, sdk.ToolResultBlockParamContentUnion{OfDocument: b.OfDocument})
		case b.OfText != nil && b.OfText.Text != "":
			out = append(out, sdk.ToolResultBlockParamContentUnion{OfText: b.OfText})
		}
	}
	return out
}

func isToolResults(m sdk.MessageParam) bool {
	if m.Role != sdk.MessageParamRoleUser || len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return true
}

// toolInput is the tool_use input object; the API insists on an object, so
// missing or garbled arguments go back as {}.
func toolInput(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return args
}

// inputSchema splits a JSON Schema object into the SDK's shape: properties
// and required as fields, everything else passed through.
func inputSchema(params json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var schema sdk.ToolInputSchemaParam
	if len(params) == 0 {
		return schema, nil
	}
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil {
		return schema, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	schema.Properties = m["properties"]
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				schema.Required = append(schema.Required, s)
			}
		}
	}
	for k, v := range m {
		if k == "type" || k == "properties" || k == "required" {
			continue
		}
		if schema.ExtraFields == nil {
			schema.ExtraFields = map[string]any{}
		}
		schema.ExtraFields[k] = v
	}
	return schema, nil
}

// mapError turns whatever the SDK returned into an *llm.APIError, or the
// context's error when the caller gave up.
func (p *Provider) mapError(ctx context.Context, err error, resp *http.Response) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", p.name, ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		if apiErr.Response != nil && apiErr.StatusCode >= 400 {
			return llm.StatusError(p.name, apiErr.StatusCode, apiErr.Response.Header, readBody(apiErr.Response))
		}
		// An error event inside a 200 stream, e.g. overloaded_error.
		return eventError(p.name, apiErr)
	}
	if resp != nil && resp.StatusCode >= 400 {
		return llm.StatusError(p.name, resp.StatusCode, resp.Header, readBody(resp))
	}
	if resp == nil {
		return &llm.APIError{Provider: p.name, Message: fmt.Sprintf("cannot reach %s: %v", p.baseURL, err), Kind: llm.ErrServer}
	}
	return &llm.APIError{Provider: p.name, Message: fmt.Sprintf("stream broke off: %v", err), Kind: llm.ErrStream}
}

func eventError(provider string, e *sdk.Error) *llm.APIError {
	out := &llm.APIError{Provider: provider, Message: llm.ErrorMessage([]byte(e.RawJSON())), Kind: llm.ErrBadRequest}
	if out.Message == "" {
		out.Message = "error event in stream"
	}
	switch e.Type() {
	case "rate_limit_error":
		out.Kind = llm.ErrRateLimited
	case "overloaded_error", "api_error", "timeout_error":
		out.Kind = llm.ErrServer
	case "authentication_error", "permission_error":
		out.Kind = llm.ErrAuth
	}
	return out
}

func readBody(resp *http.Response) []byte {
	if resp.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b
}

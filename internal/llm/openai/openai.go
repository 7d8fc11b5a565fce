// Package openai is the llm.Provider for OpenAI's chat-completions API and
// the many servers that speak it (OpenRouter, Ollama, vLLM, llama.cpp, LM
// Studio), selected by base URL.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/baton-agent/baton/internal/llm"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config selects the server and model. Nothing is read from the
// environment: callers resolve configuration and pass it here.
type Config struct {
	Name       string       // Name() and label in errors, e.g. "openrouter"; "" means "openai"
	BaseURL    string       // "" means DefaultBaseURL; include the /v1 the server expects
	APIKey     string       // may be empty for local servers
	Model      string       // used when Request.Model is empty
	HTTPClient *http.Client // nil: the SDK's default client
}

// Provider talks to one OpenAI-compatible server.
type Provider struct {
	name    string
	baseURL string
	model   string
	client  oai.Client
	// OpenAI's newer models refuse max_tokens, while many compatible servers
	// only know it; pick by whether this is OpenAI itself.
	maxCompletionTokens bool
}

var _ llm.Provider = (*Provider)(nil)

// New builds a provider. Base URL, key and retries are always set
// explicitly: the SDK would otherwise read OPENAI_* variables and retry on
// its own, and retrying is llm.WithRetry's job.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an absolute URL", cfg.Name, cfg.BaseURL)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{
		name:                cfg.Name,
		baseURL:             cfg.BaseURL,
		model:               cfg.Model,
		client:              oai.NewClient(opts...),
		maxCompletionTokens: u.Hostname() == "api.openai.com",
	}, nil
}

// Name is the configured label, "openai" by default.
func (p *Provider) Name() string { return p.name }

// Chat streams one completion, handing text pieces to onDelta as they come.
func (p *Provider) Chat(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	var httpResp *http.Response
	stream := p.client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer stream.Close()

	var (
		out      llm.Response
		text     strings.Builder
		calls    toolCalls
		finished bool
	)
	for stream.Next() {
		chunk := stream.Current()
		if u := chunk.Usage; u.PromptTokens != 0 || u.CompletionTokens != 0 {
			out.Usage = llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // we ask for one choice; ignore strays
			}
			if s := ch.Delta.Content; s != "" {
				text.WriteString(s)
				if onDelta != nil {
					onDelta(llm.Delta{Text: s})
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				calls.add(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finished = true
				out.StopReason = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return llm.Response{}, p.mapError(ctx, err, httpResp)
	}
	if !finished {
		// The body ended cleanly but without a finish_reason: a proxy or
		// server cut the stream short, and the answer may be incomplete.
		return llm.Response{}, &llm.APIError{Provider: p.name, Message: "stream ended before the model finished its answer", Kind: llm.ErrStream}
	}
	out.Text = text.String()
	out.ToolCalls = calls.result()
	return out, nil
}

func (p *Provider) params(req llm.Request) (oai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return oai.ChatCompletionNewParams{}, fmt.Errorf("%s: no model named in the request or the config", p.name)
	}
	msgs, err := messages(req)
	if err != nil {
		return oai.ChatCompletionNewParams{}, fmt.Errorf("%s: %w", p.name, err)
	}
	tools, err := tools(req.Tools)
	if err != nil {
		return oai.ChatCompletionNewParams{}, fmt.Errorf("%s: %w", p.name, err)
	}
	params := oai.ChatCompletionNewParams{
		Model:         shared.ChatModel(model),
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		if p.maxCompletionTokens {
			params.MaxCompletionTokens = oai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = oai.Int(int64(req.MaxTokens))
		}
	}
	return params, nil
}

func messages(req llm.Request) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, oai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			out = append(out, oai.SystemMessage(m.Content))
		case llm.RoleUser:
			out = append(out, oai.UserMessage(m.Content))
		case llm.RoleAssistant:
			var a oai.ChatCompletionAssistantMessageParam
			// Content is optional next to tool calls; some servers reject "".
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = oai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: argsOrEmpty(tc.Arguments),
						},
					},
				})
			}
			out = append(out, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.RoleTool:
			out = append(out, oai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

func tools(ts []llm.Tool) ([]oai.ChatCompletionToolUnionParam, error) {
	out := make([]oai.ChatCompletionToolUnionParam, 0, len(ts))
	for _, t := range ts {
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
			fd.Parameters = shared.FunctionParameters(schema)
		}
		out = append(out, oai.ChatCompletionFunctionTool(fd))
	}
	return out, nil
}

func argsOrEmpty(a json.RawMessage) string {
	if len(a) == 0 {
		return "{}"
	}
	return string(a)
}

// mapError turns whatever the SDK returned into an *llm.APIError, or the
// context's error when the caller gave up.
func (p *Provider) mapError(ctx context.Context, err error, resp *http.Response) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", p.name, ctxErr)
	}
	var apiErr *oai.Error
	if errors.As(err, &apiErr) && apiErr.Response != nil {
		return llm.StatusError(p.name, apiErr.StatusCode, apiErr.Response.Header, readBody(apiErr.Response))
	}
	// An error body the SDK could not decode (e.g. {"error": "…"} from
	// Ollama) still leaves the response for us to read.
	if resp != nil && resp.StatusCode >= 400 {
		return llm.StatusError(p.name, resp.StatusCode, resp.Header, readBody(resp))
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return streamError(p.name, streamErr)
	}
	if resp == nil {
		return &llm.APIError{Provider: p.name, Message: fmt.Sprintf("cannot reach %s: %v", p.baseURL, err), Kind: llm.ErrServer}
	}
	return &llm.APIError{Provider: p.name, Message: fmt.Sprintf("stream broke off: %v", err), Kind: llm.ErrStream}
}

// streamError maps an error event inside a 200 stream (OpenRouter sends
// these when the upstream fails mid-answer), using its code when numeric.
func streamError(provider string, se *ssestream.StreamError) *llm.APIError {
	e := &llm.APIError{Provider: provider, Message: llm.ErrorMessage(se.Event.Data), Kind: llm.ErrServer}
	if e.Message == "" {
		e.Message = se.Message
	}
	var body struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	var code int
	if json.Unmarshal(se.Event.Data, &body) == nil && json.Unmarshal(body.Error.Code, &code) == nil && code >= 400 {
		e.Kind = llm.KindForStatus(code)
	}
	return e
}

func readBody(resp *http.Response) []byte {
	if resp.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b
}

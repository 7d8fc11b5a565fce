// Package openai is the llm.Provider for OpenAI's chat-completions API and
// the many servers that speak it (OpenRouter, Ollama, vLLM, llama.cpp, LM
// Studio), selected by base URL.
//
// It is built on github.com/sashabaranov/go-openai rather than the official
// SDK: the official SDK's root package registers every API type at init,
// which put ~20 MB into the binary for the one streaming call baton makes.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"

	oai "github.com/sashabaranov/go-openai"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/blob"
	"github.com/baton-agent/baton/internal/llm/imagefit"
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
	HTTPClient *http.Client // nil: http.DefaultClient
	// NoImages says the model takes no image input (many local models):
	// images are sent as their one-line description instead.
	NoImages bool
	// PDFFiles says the server takes PDFs as "file" content parts. OpenAI
	// and OpenRouter do, and are recognised by their host; elsewhere a PDF
	// is sent as its one-line description.
	PDFFiles bool
}

// Provider talks to one OpenAI-compatible server.
type Provider struct {
	name    string
	baseURL string
	model   string
	http    *http.Client
	client  oai.ClientConfig // copied per call, with that call's exchange as its HTTP client
	// OpenAI's newer models refuse max_tokens, while many compatible servers
	// only know it; pick by whether this is OpenAI itself.
	maxCompletionTokens bool
	noImages            bool
	pdfFiles            bool
	fitted              *imagefit.Cache // images fitted for earlier turns
}

var _ llm.Provider = (*Provider)(nil)
var _ llm.Seer = (*Provider)(nil)

// New builds a provider. The client reads no environment variables and
// never retries: retrying is llm.WithRetry's job.
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
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	cc := oai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cfg.BaseURL
	// The library counts blank lines between events against this limit and
	// fails the stream past it; a model that works for minutes behind
	// keep-alives is not an error, and the caller's context bounds the wait.
	cc.EmptyMessagesLimit = math.MaxUint
	return &Provider{
		name:                cfg.Name,
		baseURL:             cfg.BaseURL,
		model:               cfg.Model,
		http:                cfg.HTTPClient,
		client:              cc,
		maxCompletionTokens: u.Hostname() == "api.openai.com",
		noImages:            cfg.NoImages,
		fitted:              imagefit.NewCache(0),
		pdfFiles:            cfg.PDFFiles || u.Hostname() == "api.openai.com" || u.Hostname() == "openrouter.ai",
	}, nil
}

// Name is the configured label, "openai" by default.
func (p *Provider) Name() string { return p.name }

// SeesImages is false when the config says the model takes no images.
func (p *Provider) SeesImages(string) bool { return !p.noImages }

// Chat streams one completion, handing text pieces to onDelta as they come.
func (p *Provider) Chat(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	blobs := blob.New()
	creq, files, err := p.request(req, blobs)
	if err != nil {
		return llm.Response{}, err
	}
	ex := &exchange{client: p.http, fillEmptyContent: needsEmptyContent(creq.Messages), files: files, blobs: blobs}
	cc := p.client
	cc.HTTPClient = ex
	stream, err := oai.NewClientWithConfig(cc).CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return llm.Response{}, p.mapError(ctx, err, ex)
	}
	defer stream.Close()

	var (
		out      llm.Response
		text     strings.Builder
		calls    toolCalls
		finished bool
	)
	for {
		chunk, err := stream.Recv()
		if ex.errorEvent != nil {
			return llm.Response{}, streamError(p.name, ex.errorEvent)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return llm.Response{}, p.mapError(ctx, err, ex)
		}
		if u := chunk.Usage; u != nil && (u.PromptTokens != 0 || u.CompletionTokens != 0) {
			out.Usage = llm.Usage{InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens)}
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
				index := 0
				if tc.Index != nil {
					index = *tc.Index
				}
				calls.add(index, tc.ID, tc.Function.Name, tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finished = true
				out.StopReason = string(ch.FinishReason)
			}
		}
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

// request builds the library's request, and the PDFs it carries as
// placeholders for the exchange to fill in.
func (p *Provider) request(req llm.Request, blobs *blob.Set) (oai.ChatCompletionRequest, []filePart, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return oai.ChatCompletionRequest{}, nil, fmt.Errorf("%s: no model named in the request or the config", p.name)
	}
	pc := parts{seesImages: !p.noImages, pdfFiles: p.pdfFiles, blobs: blobs, fitted: p.fitted}
	msgs, err := messages(req, &pc)
	if err != nil {
		return oai.ChatCompletionRequest{}, nil, fmt.Errorf("%s: %w", p.name, err)
	}
	tools, err := tools(req.Tools)
	if err != nil {
		return oai.ChatCompletionRequest{}, nil, fmt.Errorf("%s: %w", p.name, err)
	}
	creq := oai.ChatCompletionRequest{
		Model:         model,
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: &oai.StreamOptions{IncludeUsage: true},
	}
	if req.MaxTokens > 0 {
		creq.MaxTokens = req.MaxTokens
		// The library refuses max_tokens for OpenAI's reasoning models
		// (o1, o3, o4, gpt-5) before sending; a server that serves them
		// under those names wants max_completion_tokens anyway.
		if p.maxCompletionTokens || errors.Is(oai.NewReasoningValidator().Validate(creq), oai.ErrReasoningModelMaxTokensDeprecated) {
			creq.MaxTokens, creq.MaxCompletionTokens = 0, req.MaxTokens
		}
	}
	return creq, pc.files, nil
}

// toolPartsNote is the text of the user message that carries tool
// results' pictures, so the model reads them as the tools' output.
const toolPartsNote = "(The files above are the output of the tool calls just answered.)"

func messages(req llm.Request, pc *parts) ([]oai.ChatCompletionMessage, error) {
	out := make([]oai.ChatCompletionMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, oai.ChatCompletionMessage{Role: oai.ChatMessageRoleSystem, Content: req.System})
	}
	var toolParts []llm.Part // the current run of tool results' parts
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			out = append(out, pc.user(m))
		case llm.RoleSystem:
			out = append(out, oai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content})
		case llm.RoleAssistant:
			a := oai.ChatCompletionMessage{Role: oai.ChatMessageRoleAssistant, Content: m.Content}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ToolCall{
					ID:       tc.ID,
					Type:     oai.ToolTypeFunction,
					Function: oai.FunctionCall{Name: tc.Name, Arguments: argsOrEmpty(tc.Arguments)},
				})
			}
			out = append(out, a)
		case llm.RoleTool:
			out = append(out, oai.ChatCompletionMessage{Role: oai.ChatMessageRoleTool, Content: m.Content, ToolCallID: m.ToolCallID})
			// A tool message carries text only: its pictures (an MCP
			// tool's) follow the results in a user message of their own.
			toolParts = append(toolParts, m.Parts...)
			if len(toolParts) > 0 && (i+1 == len(req.Messages) || req.Messages[i+1].Role != llm.RoleTool) {
				out = append(out, pc.user(llm.Message{Role: llm.RoleUser, Parts: toolParts, Content: toolPartsNote}))
				toolParts = nil
			}
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// needsEmptyContent reports whether a message must carry "content": "" that
// the library would leave out: every message but an assistant's tool calls
// needs a content field, and strict servers reject one without it.
func needsEmptyContent(msgs []oai.ChatCompletionMessage) bool {
	for _, m := range msgs {
		if m.Content == "" && len(m.MultiContent) == 0 && len(m.ToolCalls) == 0 {
			return true
		}
	}
	return false
}

// noParameters is the schema of a tool that takes no arguments; the library
// would otherwise send "parameters": null, which OpenAI rejects.
var noParameters = json.RawMessage(`{"type":"object","properties":{}}`)

func tools(ts []llm.Tool) ([]oai.Tool, error) {
	out := make([]oai.Tool, 0, len(ts))
	for _, t := range ts {
		fd := &oai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: noParameters}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
			if schema != nil {
				fd.Parameters = schema
			}
		}
		out = append(out, oai.Tool{Type: oai.ToolTypeFunction, Function: fd})
	}
	return out, nil
}

func argsOrEmpty(a json.RawMessage) string {
	if len(a) == 0 {
		return "{}"
	}
	return string(a)
}

// mapError turns whatever the library returned into an *llm.APIError, or the
// context's error when the caller gave up. The exchange, not the library's
// error, is the source: it kept the status, headers and body as sent.
func (p *Provider) mapError(ctx context.Context, err error, ex *exchange) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", p.name, ctxErr)
	}
	switch {
	case ex.errorEvent != nil:
		return streamError(p.name, ex.errorEvent)
	case ex.status >= http.StatusBadRequest:
		return llm.StatusError(p.name, ex.status, ex.header, ex.errorBody)
	case !ex.sent:
		// The library refused the request before sending it.
		return &llm.APIError{Provider: p.name, Message: err.Error(), Kind: llm.ErrBadRequest}
	case ex.status == 0:
		return &llm.APIError{Provider: p.name, Message: fmt.Sprintf("cannot reach %s: %v", p.baseURL, err), Kind: llm.ErrServer}
	default:
		return &llm.APIError{Provider: p.name, Message: fmt.Sprintf("stream broke off: %v", err), Kind: llm.ErrStream}
	}
}

// streamError maps an error event inside a 200 stream (OpenRouter sends
// these when the upstream fails mid-answer), using its code when numeric.
func streamError(provider string, data []byte) *llm.APIError {
	e := &llm.APIError{Provider: provider, Message: llm.ErrorMessage(data), Kind: llm.ErrServer}
	if e.Message == "" {
		e.Message = "error event in the stream"
	}
	var body struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	var code int
	if json.Unmarshal(data, &body) == nil && json.Unmarshal(body.Error.Code, &code) == nil && code >= 400 {
		e.Kind = llm.KindForStatus(code)
	}
	return e
}

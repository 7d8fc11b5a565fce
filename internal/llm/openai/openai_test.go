package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
)

func newProvider(t *testing.T, cfg openai.Config) *openai.Provider {
	t.Helper()
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sameJSON compares a decoded request field with the JSON we expect on the wire.
func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", "  ")
		e, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("%s on the wire:\n%s\nwant:\n%s", what, g, e)
	}
}

func TestRequestAsSent(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{Name: "openrouter", BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "default-model"})
	if p.Name() != "openrouter" {
		t.Errorf("Name() = %q", p.Name())
	}
	srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{ID: "call_abc", Name: "read_file", Args: `{"path":"x"}`}}})
	srv.Push(llmtest.Reply{Text: "done"})

	req := llm.Request{
		System:   "You are baton.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "read x"}},
		Tools: []llm.Tool{{
			Name: "read_file", Description: "Read a file.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		}},
	}
	resp, err := p.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{{ID: "call_abc", Name: "read_file", Arguments: json.RawMessage(`{"path":"x"}`)}}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.Text != "" {
		t.Fatalf("response = %+v", resp)
	}

	req.Model = "other-model"
	req.MaxTokens = 100
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_abc", ToolName: "read_file", Content: "hello"},
	)
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if first.Path != "/v1/chat/completions" || first.Method != http.MethodPost {
		t.Errorf("first request %s %s", first.Method, first.Path)
	}
	if got := first.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if first.Model() != "default-model" || second.Model() != "other-model" {
		t.Errorf("models %q, %q", first.Model(), second.Model())
	}
	if !first.Streamed() {
		t.Error("request not streamed")
	}
	sameJSON(t, "stream_options", first.Body["stream_options"], `{"include_usage":true}`)
	if _, ok := first.Body["max_tokens"]; ok {
		t.Error("max_tokens sent although the request left it at 0")
	}
	if second.Body["max_tokens"] != 100.0 || second.Body["max_completion_tokens"] != nil {
		t.Errorf("second request max tokens: %v / %v", second.Body["max_tokens"], second.Body["max_completion_tokens"])
	}
	sameJSON(t, "tools", first.Body["tools"], `[{"type":"function","function":{
		"name":"read_file","description":"Read a file.",
		"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`)
	sameJSON(t, "first messages", first.Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":"read x"}]`)
	sameJSON(t, "second messages", second.Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":"read x"},
		{"role":"assistant","tool_calls":[{"id":"call_abc","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]},
		{"role":"tool","tool_call_id":"call_abc","content":"hello"}]`)
}

func TestAssistantTextAndSystemTurn(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "a"},
		{Role: llm.RoleAssistant, Content: "b"},
		{Role: llm.RoleSystem, Content: "note"},
		{Role: llm.RoleUser, Content: "c"},
	}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Path != "/chat/completions" {
		t.Errorf("path %q", r.Path)
	}
	if h := r.Header.Get("Authorization"); h != "" {
		t.Errorf("no key configured, yet Authorization = %q", h)
	}
	sameJSON(t, "messages", r.Body["messages"], `[
		{"role":"user","content":"a"},{"role":"assistant","content":"b"},
		{"role":"system","content":"note"},{"role":"user","content":"c"}]`)
}

func TestMaxCompletionTokensForOpenAIItself(t *testing.T) {
	// api.openai.com is never contacted: the transport answers locally.
	var body map[string]any
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return nil, err
		}
		return &http.Response{StatusCode: 401, Header: http.Header{"Content-Type": {"application/json"}},
			Body: http.NoBody, Request: r}, nil
	})
	p := newProvider(t, openai.Config{APIKey: "k", Model: "gpt", HTTPClient: &http.Client{Transport: rt}})
	_, err := p.Chat(context.Background(), llm.Request{MaxTokens: 5, Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil)
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("err = %v", err)
	}
	if body["max_completion_tokens"] != 5.0 || body["max_tokens"] != nil {
		t.Errorf("body = %v", body)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestEnvironmentIgnored(t *testing.T) {
	srv := llmtest.Start(t)
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-config", Model: "m"})
	if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-config" {
		t.Errorf("Authorization = %q", got)
	}
}

// sseServer answers every request with the given raw SSE body and then ends
// the response normally.
func sseServer(t *testing.T, body string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestCleanEOFWithoutFinishIsStreamError(t *testing.T) {
	url := sseServer(t, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}`+"\n\n")
	p := newProvider(t, openai.Config{BaseURL: url, Model: "m"})
	var got string
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, func(d llm.Delta) { got += d.Text })
	if !errors.Is(err, llm.ErrStream) || got != "half" {
		t.Fatalf("err = %v, deltas = %q", err, got)
	}
}

func TestErrorEventInStream(t *testing.T) {
	url := sseServer(t, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"+
		`data: {"error":{"message":"upstream provider overloaded","code":502}}`+"\n\n")
	p := newProvider(t, openai.Config{BaseURL: url, Model: "m"})
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, llm.ErrServer) || apiErr.Message != "upstream provider overloaded" {
		t.Fatalf("err = %v", err)
	}
}

func TestSplitToolCallFragments(t *testing.T) {
	// Servers differ: some number every call 0 and tell them apart by id.
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
	}
	body := chunk(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_","arguments":"{\"p\":"}}]}`, "") +
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"file","arguments":"1}"}}]}`, "") +
		chunk(`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"ls","arguments":""}}]}`, "") +
		chunk(`{}`, "tool_calls") + "data: [DONE]\n\n"
	p := newProvider(t, openai.Config{BaseURL: sseServer(t, body), Model: "m"})
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "a", Name: "read_file", Arguments: json.RawMessage(`{"p":1}`)},
		{ID: "b", Name: "ls", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("ToolCalls = %+v", resp.ToolCalls)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := openai.New(openai.Config{BaseURL: "not a url"}); err == nil {
		t.Error("relative base URL accepted")
	}
	p := newProvider(t, openai.Config{BaseURL: "http://127.0.0.1:1"})
	_, err := p.Chat(context.Background(), llm.Request{}, nil)
	if err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("err = %v, want a missing-model error", err)
	}
	_, err = p.Chat(context.Background(), llm.Request{Model: "m", Tools: []llm.Tool{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, nil)
	if err == nil || !strings.Contains(err.Error(), `tool "t"`) {
		t.Errorf("err = %v, want a bad-schema error", err)
	}
}

func TestEmptyContentStillSent(t *testing.T) {
	// Reading an empty file gives an empty tool result; strict servers
	// reject a message without a content field.
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1/", Model: "m"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "read empty.txt"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"empty.txt"}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "read_file", Content: ""},
		{Role: llm.RoleAssistant, Content: ""},
		{Role: llm.RoleUser, Content: ""},
	}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path %q for a base URL with a trailing slash", r.Path)
	}
	if r.Model() != "m" || !r.Streamed() {
		t.Errorf("model %q, streamed %v: the rewritten body lost fields", r.Model(), r.Streamed())
	}
	sameJSON(t, "messages", r.Body["messages"], `[
		{"role":"user","content":"read empty.txt"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"empty.txt\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":""},
		{"role":"assistant","content":""},
		{"role":"user","content":""}]`)
}

func TestToolWithoutParameters(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{{Name: "now"}}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "tools", srv.Requests()[0].Body["tools"], `[{"type":"function","function":{
		"name":"now","parameters":{"type":"object","properties":{}}}}]`)
}

func TestReasoningModelElsewhereGetsMaxCompletionTokens(t *testing.T) {
	// A proxy serving OpenAI's reasoning models under their own names: the
	// library refuses max_tokens for them, so the request must not use it.
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "o3-mini"})
	req := llm.Request{MaxTokens: 64, Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0].Body
	if body["max_completion_tokens"] != 64.0 || body["max_tokens"] != nil {
		t.Errorf("max tokens on the wire: %v / %v", body["max_tokens"], body["max_completion_tokens"])
	}
}

func TestErrorEventAfterKeepAlives(t *testing.T) {
	// OpenRouter sends comment lines while the upstream model works, and
	// reports a failure mid-answer in a chunk whose error is not its first
	// member, with a code that is a string.
	keepAlives := strings.Repeat(": OPENROUTER PROCESSING\n\n", 400)
	for name, c := range map[string]struct {
		event string
		kind  error
		msg   string
	}{
		"openrouter chunk": {
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
			llm.ErrServer, "Provider disconnected"},
		"error first, numeric code": {`{"error":{"message":"slow down","code":429}}`, llm.ErrRateLimited, "slow down"},
		"error as a string":         {`{"error":"model crashed"}`, llm.ErrServer, "model crashed"},
	} {
		t.Run(name, func(t *testing.T) {
			body := keepAlives +
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}` + "\n\n" +
				keepAlives + "data: " + c.event + "\n\n"
			p := newProvider(t, openai.Config{BaseURL: sseServer(t, body), Model: "m"})
			var got string
			_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, func(d llm.Delta) { got += d.Text })
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) || !errors.Is(err, c.kind) || apiErr.Message != c.msg {
				t.Fatalf("err = %v, want kind %v with %q", err, c.kind, c.msg)
			}
			if got != "partial" {
				t.Errorf("deltas = %q", got)
			}
		})
	}
}

func TestErrorBodyShapes(t *testing.T) {
	// The status decides the kind and the body gives the words, whatever
	// shape the server's error body has.
	for _, c := range []struct {
		body, msg string
		header    http.Header
		kind      error
		after     time.Duration
	}{
		{`{"error":{"message":"Invalid API key","type":"invalid_request_error"}}`, "Invalid API key", nil, llm.ErrAuth, 0},
		{`{"detail":"Not authenticated"}`, "Not authenticated", nil, llm.ErrAuth, 0},
		{`{"message":"quota"}`, "quota", http.Header{"Retry-After-Ms": {"1500"}}, llm.ErrRateLimited, 1500 * time.Millisecond},
	} {
		status := 401
		if c.kind == llm.ErrRateLimited {
			status = 429
		}
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range c.header {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, c.body)
		}))
		p := newProvider(t, openai.Config{BaseURL: hs.URL, Model: "m"})
		_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil)
		hs.Close()
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, c.kind) || apiErr.Status != status || apiErr.Message != c.msg || apiErr.RetryAfter != c.after {
			t.Errorf("body %s: err = %v (%+v)", c.body, err, apiErr)
		}
	}
}

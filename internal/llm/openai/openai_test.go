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

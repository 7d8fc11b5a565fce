package anthropic_test

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
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/llmtest"
)

func newProvider(t *testing.T, cfg anthropic.Config) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(cfg)
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
	p := newProvider(t, anthropic.Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-default"})
	if p.Name() != "anthropic" {
		t.Errorf("Name() = %q", p.Name())
	}
	srv.Push(llmtest.Reply{Text: "Reading both.", ToolCalls: []llmtest.Call{
		{ID: "toolu_1", Name: "read_file", Args: `{"path":"x"}`},
		{ID: "toolu_2", Name: "read_file", Args: `{"path":"y"}`},
	}})
	srv.Push(llmtest.Reply{Text: "done"})

	req := llm.Request{
		System:   "You are baton.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "read x and y"}},
		Tools: []llm.Tool{{
			Name: "read_file", Description: "Read a file.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		}},
	}
	resp, err := p.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"x"}`)},
		{ID: "toolu_2", Name: "read_file", Arguments: json.RawMessage(`{"path":"y"}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.Text != "Reading both." || resp.StopReason != "tool_use" {
		t.Fatalf("response = %+v", resp)
	}

	req.Model = "claude-other"
	req.MaxTokens = 100
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", ToolName: "read_file", Content: "hello"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_2", ToolName: "read_file", Content: ""},
		llm.Message{Role: llm.RoleUser, Content: "thanks"},
	)
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if first.Path != "/v1/messages" {
		t.Errorf("path %q", first.Path)
	}
	if got := first.Header.Get("X-Api-Key"); got != "sk-ant-test" {
		t.Errorf("x-api-key = %q", got)
	}
	if first.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	if first.Model() != "claude-default" || second.Model() != "claude-other" {
		t.Errorf("models %q, %q", first.Model(), second.Model())
	}
	if !first.Streamed() {
		t.Error("request not streamed")
	}
	if first.Body["max_tokens"] != float64(anthropic.DefaultMaxTokens) || second.Body["max_tokens"] != 100.0 {
		t.Errorf("max_tokens %v, %v", first.Body["max_tokens"], second.Body["max_tokens"])
	}
	sameJSON(t, "system", first.Body["system"], `[{"type":"text","text":"You are baton."}]`)
	sameJSON(t, "tools", first.Body["tools"], `[{"name":"read_file","description":"Read a file.",
		"input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}}]`)
	sameJSON(t, "first messages", first.Body["messages"], `[{"role":"user","content":[{"type":"text","text":"read x and y"}]}]`)
	sameJSON(t, "second messages", second.Body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"read x and y"}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Reading both."},
			{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"x"}},
			{"type":"tool_use","id":"toolu_2","name":"read_file","input":{"path":"y"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"hello"}]},
			{"type":"tool_result","tool_use_id":"toolu_2"}]},
		{"role":"user","content":[{"type":"text","text":"thanks"}]}]`)
}

func TestEnvironmentIgnored(t *testing.T) {
	srv := llmtest.Start(t)
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-env")
	p := newProvider(t, anthropic.Config{BaseURL: srv.URL, APIKey: "sk-config", Model: "m"})
	if _, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != "sk-config" || h.Get("Authorization") != "" {
		t.Errorf("x-api-key = %q, authorization = %q", h.Get("X-Api-Key"), h.Get("Authorization"))
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

const start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half\"}}\n\n"

func TestCleanEOFWithoutMessageStopIsStreamError(t *testing.T) {
	p := newProvider(t, anthropic.Config{BaseURL: sseServer(t, start), Model: "m"})
	var got string
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, func(d llm.Delta) { got += d.Text })
	if !errors.Is(err, llm.ErrStream) || got != "half" {
		t.Fatalf("err = %v, deltas = %q", err, got)
	}
}

func TestErrorEventInStream(t *testing.T) {
	body := start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	p := newProvider(t, anthropic.Config{BaseURL: sseServer(t, body), Model: "m"})
	_, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, llm.ErrServer) || apiErr.Message != "Overloaded" || apiErr.Status != 0 {
		t.Fatalf("err = %v (%#v)", err, apiErr)
	}
}

func TestGarbledToolArgumentsSentAsEmptyObject(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, anthropic.Config{BaseURL: srv.URL, Model: "m"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "x"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`{"unterminated`)}}},
		{Role: llm.RoleTool, ToolCallID: "t1", Content: "bad arguments"},
	}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Requests()[0].Messages()
	sameJSON(t, "assistant turn", msgs[1], `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`)
}

func TestConfigErrors(t *testing.T) {
	if _, err := anthropic.New(anthropic.Config{BaseURL: "/relative"}); err == nil {
		t.Error("relative base URL accepted")
	}
	p := newProvider(t, anthropic.Config{BaseURL: "http://127.0.0.1:1"})
	if _, err := p.Chat(context.Background(), llm.Request{}, nil); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("err = %v, want a missing-model error", err)
	}
}

package llmtest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// dataLines returns the data: payloads of an SSE body, and the event: names.
func dataLines(body string) (data, events []string) {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, e)
		}
	}
	return data, events
}

func TestOpenAIStreamShape(t *testing.T) {
	srv := llmtest.Start(t)
	srv.Push(llmtest.Reply{Text: "hi there", ToolCalls: []llmtest.Call{{Name: "f", Args: `{"a":1}`}}, Usage: llmtest.Usage{Input: 5, Output: 3}})
	resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	data, _ := dataLines(body)
	if len(data) < 4 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream does not end in [DONE]:\n%s", body)
	}
	var last struct {
		Choices []any          `json:"choices"`
		Usage   map[string]int `json:"usage"`
	}
	if err := json.Unmarshal([]byte(data[len(data)-2]), &last); err != nil {
		t.Fatal(err)
	}
	if len(last.Choices) != 0 || last.Usage["prompt_tokens"] != 5 || last.Usage["completion_tokens"] != 3 || last.Usage["total_tokens"] != 8 {
		t.Errorf("usage chunk = %s", data[len(data)-2])
	}
	var text, args string
	var finish string
	for _, d := range data[:len(data)-2] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		text += c.Choices[0].Delta.Content
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			args += tc.Function.Arguments
		}
		if c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
		}
	}
	if text != "hi there" || args != `{"a":1}` || finish != "tool_calls" {
		t.Errorf("assembled text %q, args %q, finish %q", text, args, finish)
	}
}

func TestOpenAINoUsageChunkUnlessAsked(t *testing.T) {
	srv := llmtest.Start(t)
	_, body := post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if strings.Contains(body, `"usage"`) {
		t.Errorf("usage sent without stream_options.include_usage:\n%s", body)
	}
}

func TestOpenAINotStreamed(t *testing.T) {
	srv := llmtest.Start(t)
	srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{ID: "c1", Name: "f"}}})
	_, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	var got struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	m := got.Choices[0].Message
	if got.Object != "chat.completion" || m.Content != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "c1" ||
		m.ToolCalls[0].Function.Arguments != "{}" || got.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("completion = %s", body)
	}
	// Unscripted, not streamed: the echo as plain JSON.
	_, body = post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"parts"}]}]}`)
	if !strings.Contains(body, `"content":"echo: parts"`) {
		t.Errorf("echo = %s", body)
	}
}

func TestAnthropicStreamShape(t *testing.T) {
	srv := llmtest.Start(t)
	srv.Push(llmtest.Reply{Text: "a b", ToolCalls: []llmtest.Call{{Name: "f", Args: `{"k": "v"}`}}})
	_, body := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	_, events := dataLines(body)
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(events, " ") != want {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, " "), want)
	}
	if !strings.Contains(body, `"stop_reason":"tool_use"`) || !strings.Contains(body, `"type":"input_json_delta"`) {
		t.Errorf("body:\n%s", body)
	}
}

func TestAnthropicNotStreamedAndErrors(t *testing.T) {
	srv := llmtest.Start(t)
	_, body := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"yo"}]}]}`)
	if !strings.Contains(body, `"text":"echo: yo"`) || !strings.Contains(body, `"stop_reason":"end_turn"`) {
		t.Errorf("message = %s", body)
	}
	srv.Push(llmtest.Fail{Status: 429, RetryAfter: "3"})
	resp, body := post(t, srv.URL+"/v1/messages", `{"model":"m","messages":[]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(body, `"type":"rate_limit_error"`) {
		t.Errorf("fail = %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, _ = post(t, srv.URL+"/v1/nothing", `{}`)
	if resp.StatusCode != 404 {
		t.Errorf("unknown path answered %d", resp.StatusCode)
	}
	resp, _ = post(t, srv.URL+"/v1/messages", `not json`)
	if resp.StatusCode != 400 {
		t.Errorf("bad JSON answered %d", resp.StatusCode)
	}
}

func TestRequestsAreCopiesAndEchoSkipsToolResults(t *testing.T) {
	srv := llmtest.Start(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		return llmtest.Reply{Text: "last=" + r.LastUserText()}
	})
	_, body := post(t, srv.URL+"/v1/messages", `{"model":"m","stream":false,"messages":[
		{"role":"user","content":"question"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`)
	if !strings.Contains(body, "last=question") {
		t.Errorf("body = %s", body)
	}
	reqs := srv.Requests()
	reqs[0].Body["model"] = "changed"
	reqs[0].Header.Set("X-Changed", "1")
	again := srv.Requests()[0]
	if again.Model() != "m" || again.Header.Get("X-Changed") != "" || again.Protocol() != llmtest.ProtocolAnthropic || again.Streamed() {
		t.Errorf("recorded request changed through a copy, or misread: %+v", again)
	}
	srv.SetDefault(nil)
	_, body = post(t, srv.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hey"}]}`)
	if !strings.Contains(body, "echo: hey") {
		t.Errorf("default not restored: %s", body)
	}
}

func TestConcurrentRequests(t *testing.T) {
	srv := llmtest.Start(t)
	for range 10 {
		srv.Push(llmtest.Reply{Text: "scripted"})
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			_ = srv.Requests()
		})
	}
	wg.Wait()
	if n := len(srv.Requests()); n != 20 || srv.Pending() != 0 {
		t.Errorf("requests %d, pending %d", n, srv.Pending())
	}
}

func TestParseScript(t *testing.T) {
	steps, err := llmtest.ParseScript([]byte(`[
		{"text": "hi", "delay_ms": 5, "usage": {"input": 1, "output": 2}},
		{"tool_calls": [{"name": "read_file", "args": {"path": "x"}}, {"id": "c", "name": "ls", "args": "{\"d\":1}"}]},
		{"fail": {"status": 429, "retry_after": "1"}},
		{"disconnect": {"text": "half", "after": 1}}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []llmtest.Step{
		llmtest.Reply{Text: "hi", Delay: 5 * time.Millisecond, Usage: llmtest.Usage{Input: 1, Output: 2}},
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path":"x"}`}, {ID: "c", Name: "ls", Args: `{"d":1}`}}},
		llmtest.Fail{Status: 429, RetryAfter: "1"},
		llmtest.Disconnect{Text: "half", After: 1},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps = %+v", steps)
	}
	for i := range want {
		if !reflect.DeepEqual(steps[i], want[i]) {
			t.Errorf("step %d = %+v, want %+v", i, steps[i], want[i])
		}
	}
	if _, err := llmtest.ParseScript([]byte(`[{"tool_calls":[{"name":"f","args":"not json"}]}]`)); err == nil {
		t.Error("bad args accepted")
	}
}

// An aside answers what it picks without taking a scripted step.
func TestAsideTakesNoScriptedStep(t *testing.T) {
	srv := llmtest.Start(t)
	srv.Aside(func(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), "[side]") },
		func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: "side answer"} })
	srv.Push(llmtest.Reply{Text: "scripted"})
	ask := func(text string) string {
		_, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"`+text+`"}]}`)
		return body
	}
	if body := ask("[side] a note please"); !strings.Contains(body, "side") || strings.Contains(body, "scripted") {
		t.Fatalf("the aside request got:\n%s", body)
	}
	if srv.Pending() != 1 {
		t.Fatalf("the aside took a scripted step: %d left", srv.Pending())
	}
	if body := ask("hello"); !strings.Contains(body, "scripted") {
		t.Fatalf("the next request got:\n%s", body)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests recorded, want 2", n)
	}
}

// A reply with Wait is held until the test lets it go, while later
// requests are answered; FirstToken delays only the first text chunk.
func TestWaitHoldsAnAnswer(t *testing.T) {
	srv := llmtest.Start(t)
	release := make(chan struct{})
	srv.Push(llmtest.Reply{Text: "held", Wait: release}, llmtest.Reply{Text: "free", FirstToken: time.Millisecond})
	held := make(chan string, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			held <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		held <- string(b)
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	_, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"y"}]}`)
	if !strings.Contains(body, `"free"`) {
		t.Fatalf("the second request got %s", body)
	}
	select {
	case b := <-held:
		t.Fatalf("the held answer came before it was let go: %s", b)
	default:
	}
	close(release)
	if b := <-held; !strings.Contains(b, `"held"`) {
		t.Errorf("the held request got %s", b)
	}
}

// Both APIs refuse a tool name with a dot, offered or in the history, as
// the fake must.
func TestToolNamesTheAPIsRefuse(t *testing.T) {
	srv := llmtest.Start(t)
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"github.list"}}]}`, "tools[0].name"},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a.b","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0]"},
		{"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"github.list","input_schema":{"type":"object"}}]}`, "tools[0].name"},
		{"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"a.b","input":{}}]}]}`, "messages.0.content.0.name"},
	} {
		resp, body := post(t, srv.URL+tc.path, tc.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s", tc.path, tc.want, resp.StatusCode, body)
		}
	}
	resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"github__list"}}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a good name was refused: %d %s", resp.StatusCode, body)
	}
}

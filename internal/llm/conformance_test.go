package llm_test

// Behaviour both SDK-backed providers must share, run against the llmtest
// fake server over real loopback HTTP. Wire-shape checks live in each
// provider's own tests.

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
)

type backend struct {
	name string
	make func(t *testing.T, baseURL string) llm.Provider
}

var backends = []backend{
	{"openai", func(t *testing.T, base string) llm.Provider {
		p, err := openai.New(openai.Config{BaseURL: base + "/v1", APIKey: "sk-test", Model: "gpt-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"anthropic", func(t *testing.T, base string) llm.Provider {
		p, err := anthropic.New(anthropic.Config{BaseURL: base, APIKey: "sk-ant-test", Model: "claude-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
}

func forEach(t *testing.T, f func(t *testing.T, srv *llmtest.Server, p llm.Provider)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.Start(t)
			f(t, srv, b.make(t, srv.URL))
		})
	}
}

// sleeps records the waits WithRetry asks for instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func userSays(text string) llm.Request {
	return llm.Request{System: "You are terse.", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func TestStreamsTextDeltasInOrder(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Reply{Text: "the quick brown fox jumps", Usage: llmtest.Usage{Input: 42, Output: 7}})
		var deltas []string
		resp, err := p.Chat(context.Background(), userSays("hi"), func(d llm.Delta) { deltas = append(deltas, d.Text) })
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"the ", "quick ", "brown ", "fox ", "jumps"}
		if strings.Join(deltas, "|") != strings.Join(want, "|") {
			t.Errorf("deltas = %q, want %q", deltas, want)
		}
		if resp.Text != "the quick brown fox jumps" {
			t.Errorf("Text = %q", resp.Text)
		}
		if resp.Usage != (llm.Usage{InputTokens: 42, OutputTokens: 7}) {
			t.Errorf("Usage = %+v, want 42/7", resp.Usage)
		}
		if resp.StopReason != "stop" && resp.StopReason != "end_turn" {
			t.Errorf("StopReason = %q", resp.StopReason)
		}
		if len(resp.ToolCalls) != 0 {
			t.Errorf("unexpected tool calls %+v", resp.ToolCalls)
		}
	})
}

func TestDefaultEchoWhenUnscripted(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		resp, err := p.Chat(context.Background(), userSays("ping pong"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "echo: ping pong" {
			t.Errorf("Text = %q", resp.Text)
		}
		if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
			t.Errorf("estimated usage missing: %+v", resp.Usage)
		}
	})
}

func TestToolCallRoundTrip(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(
			llmtest.Reply{Text: "Let me look.", ToolCalls: []llmtest.Call{
				{Name: "read_file", Args: `{"path":"x"}`},
				{Name: "list_dir", Args: `{"dir":"été/"}`},
			}},
			llmtest.Reply{Text: "It says hello."},
		)
		req := userSays("what is in x?")
		req.Tools = []llm.Tool{{Name: "read_file", Description: "Read a file", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
		var deltas strings.Builder
		resp, err := p.Chat(context.Background(), req, func(d llm.Delta) { deltas.WriteString(d.Text) })
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "Let me look." || deltas.String() != "Let me look." {
			t.Errorf("Text = %q, deltas = %q", resp.Text, deltas.String())
		}
		if resp.StopReason != "tool_calls" && resp.StopReason != "tool_use" {
			t.Errorf("StopReason = %q", resp.StopReason)
		}
		if len(resp.ToolCalls) != 2 {
			t.Fatalf("ToolCalls = %+v", resp.ToolCalls)
		}
		for i, want := range []struct{ name, args string }{{"read_file", `{"path":"x"}`}, {"list_dir", `{"dir":"été/"}`}} {
			tc := resp.ToolCalls[i]
			if tc.ID == "" || tc.Name != want.name || string(tc.Arguments) != want.args {
				t.Errorf("call %d = %+v (args %s), want %s %s", i, tc, tc.Arguments, want.name, want.args)
			}
		}

		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
			llm.Message{Role: llm.RoleTool, ToolCallID: resp.ToolCalls[0].ID, ToolName: "read_file", Content: "hello"},
			llm.Message{Role: llm.RoleTool, ToolCallID: resp.ToolCalls[1].ID, ToolName: "list_dir", Content: "x"},
		)
		resp2, err := p.Chat(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp2.Text != "It says hello." || len(resp2.ToolCalls) != 0 {
			t.Errorf("second answer = %+v", resp2)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("server saw %d requests, want 2", n)
		}
	})
}

func TestRateLimitRetriedAfterRetryAfter(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Fail{Status: 429, RetryAfter: "2"}, llmtest.Reply{Text: "finally"})
		var s sleeps
		var retried []error
		rp := llm.WithRetry(p, llm.RetryPolicy{Sleep: s.sleep, OnRetry: func(_ int, err error, _ time.Duration) { retried = append(retried, err) }})
		if rp.Name() != p.Name() {
			t.Errorf("wrapped Name() = %q, want %q", rp.Name(), p.Name())
		}
		resp, err := rp.Chat(context.Background(), userSays("hi"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "finally" {
			t.Errorf("Text = %q", resp.Text)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("server saw %d requests, want 2", n)
		}
		if got := s.got(); len(got) != 1 || got[0] != 2*time.Second {
			t.Errorf("sleeps = %v, want [2s]", got)
		}
		if len(retried) != 1 || !errors.Is(retried[0], llm.ErrRateLimited) {
			t.Errorf("OnRetry saw %v", retried)
		}
	})
}

func TestRateLimitErrorCarriesRetryAfter(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Fail{Status: 429, RetryAfter: "7", Body: `{"error":{"type":"rate_limit_error","message":"slow down please"}}`})
		_, err := p.Chat(context.Background(), userSays("hi"), nil)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, llm.ErrRateLimited) {
			t.Fatalf("err = %v, want APIError rate limited", err)
		}
		if apiErr.Status != 429 || apiErr.RetryAfter != 7*time.Second || apiErr.Message != "slow down please" || apiErr.Provider != p.Name() {
			t.Errorf("APIError = %+v", apiErr)
		}
	})
}

func TestServerErrorAfterRetriesExhausted(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Fail{Status: 500}, llmtest.Fail{Status: 500}, llmtest.Fail{Status: 500}, llmtest.Reply{Text: "never reached"})
		var s sleeps
		_, err := llm.WithRetry(p, llm.RetryPolicy{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, Sleep: s.sleep}).Chat(context.Background(), userSays("hi"), nil)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, llm.ErrServer) {
			t.Fatalf("err = %v, want APIError server error", err)
		}
		if apiErr.Status != 500 || !strings.Contains(apiErr.Message, "scripted failure 500") {
			t.Errorf("APIError = %+v", apiErr)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("server saw %d requests, want 3", n)
		}
		got := s.got()
		if len(got) != 2 {
			t.Fatalf("sleeps = %v, want 2", got)
		}
		// Equal jitter: attempt n waits within [base·2ⁿ⁻¹/2, base·2ⁿ⁻¹].
		for i, d := range got {
			hi := 100 * time.Millisecond << i
			if d < hi/2 || d > hi {
				t.Errorf("sleep %d = %v, want in [%v, %v]", i, d, hi/2, hi)
			}
		}
	})
}

func TestAuthErrorNotRetried(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Fail{Status: 401, Body: `{"error":{"type":"authentication_error","message":"invalid x-api-key"}}`})
		var s sleeps
		_, err := llm.WithRetry(p, llm.RetryPolicy{Sleep: s.sleep}).Chat(context.Background(), userSays("hi"), nil)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, llm.ErrAuth) {
			t.Fatalf("err = %v, want auth error", err)
		}
		if apiErr.Status != 401 || apiErr.Message != "invalid x-api-key" {
			t.Errorf("APIError = %+v", apiErr)
		}
		if !strings.Contains(err.Error(), "invalid x-api-key") {
			t.Errorf("Error() = %q lacks the provider's words", err.Error())
		}
		if n := len(srv.Requests()); n != 1 || len(s.got()) != 0 {
			t.Errorf("requests = %d, sleeps = %v: auth error was retried", n, s.got())
		}
	})
}

func TestStatusKinds(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		for _, c := range []struct {
			status int
			body   string
			kind   error
			msg    string
		}{
			{403, "", llm.ErrAuth, "scripted failure 403"},
			{400, `{"error":"model 'nope' not found"}`, llm.ErrBadRequest, "model 'nope' not found"},
			{404, "<html>not here</html>", llm.ErrBadRequest, "<html>not here</html>"},
			{503, "", llm.ErrServer, "scripted failure 503"},
		} {
			srv.Push(llmtest.Fail{Status: c.status, Body: c.body})
			_, err := p.Chat(context.Background(), userSays("hi"), nil)
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) || !errors.Is(err, c.kind) || apiErr.Status != c.status || !strings.Contains(apiErr.Message, c.msg) {
				t.Errorf("status %d: err = %v (%#v), want kind %v with %q", c.status, err, apiErr, c.kind, c.msg)
			}
		}
	})
}

func TestMidStreamDisconnect(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Disconnect{Text: "half an answer then more", After: 2})
		var deltas []string
		_, err := p.Chat(context.Background(), userSays("hi"), func(d llm.Delta) { deltas = append(deltas, d.Text) })
		if !errors.Is(err, llm.ErrStream) {
			t.Fatalf("err = %v, want ErrStream", err)
		}
		if strings.Join(deltas, "") != "half an " {
			t.Errorf("deltas before the cut = %q", deltas)
		}
	})
}

func TestMidStreamDisconnectNotRetriedAfterDeltas(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Disconnect{Text: "partial answer", After: 1}, llmtest.Reply{Text: "a second, duplicate answer"})
		var s sleeps
		var deltas strings.Builder
		_, err := llm.WithRetry(p, llm.RetryPolicy{Sleep: s.sleep}).Chat(context.Background(), userSays("hi"), func(d llm.Delta) { deltas.WriteString(d.Text) })
		if !errors.Is(err, llm.ErrStream) {
			t.Fatalf("err = %v, want ErrStream", err)
		}
		if deltas.String() != "partial " {
			t.Errorf("deltas = %q", deltas.String())
		}
		if n := len(srv.Requests()); n != 1 || srv.Pending() != 1 || len(s.got()) != 0 {
			t.Errorf("requests = %d, pending = %d, sleeps = %v: a stream with output was retried", n, srv.Pending(), s.got())
		}
	})
}

func TestStreamCutBeforeOutputIsRetried(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Disconnect{After: 0}, llmtest.Reply{Text: "whole answer"})
		var s sleeps
		var deltas strings.Builder
		resp, err := llm.WithRetry(p, llm.RetryPolicy{Sleep: s.sleep}).Chat(context.Background(), userSays("hi"), func(d llm.Delta) { deltas.WriteString(d.Text) })
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "whole answer" || deltas.String() != "whole answer" {
			t.Errorf("Text = %q, deltas = %q", resp.Text, deltas.String())
		}
		if n := len(srv.Requests()); n != 2 || len(s.got()) != 1 {
			t.Errorf("requests = %d, sleeps = %v", n, s.got())
		}
	})
}

func TestSlowStreamHonoursContext(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Reply{Text: "one two three four five six", Delay: 200 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var deltas []string
		start := time.Now()
		_, err := p.Chat(ctx, userSays("hi"), func(d llm.Delta) {
			deltas = append(deltas, d.Text)
			cancel() // the user pressed Ctrl-C after the first word
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if errors.Is(err, llm.ErrStream) || errors.Is(err, llm.ErrServer) {
			t.Errorf("cancellation reported as a provider failure: %v", err)
		}
		if len(deltas) != 1 {
			t.Errorf("deltas = %q", deltas)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("cancel took %v", time.Since(start))
		}
	})
}

func TestSlowStreamCompletes(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		srv.Push(llmtest.Reply{Text: "a b c", Delay: 10 * time.Millisecond})
		resp, err := p.Chat(context.Background(), userSays("hi"), nil)
		if err != nil || resp.Text != "a b c" {
			t.Fatalf("resp = %+v, err = %v", resp, err)
		}
	})
}

func TestUnreachableServer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			srv := llmtest.Start(t)
			url := srv.URL
			srv.Close() // nothing listens there any more
			_, err := b.make(t, url).Chat(context.Background(), userSays("hi"), nil)
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) || !errors.Is(err, llm.ErrServer) || !strings.Contains(apiErr.Message, "cannot reach") {
				t.Fatalf("err = %v, want unreachable server error", err)
			}
		})
	}
}

func TestImageReachesTheModelFitted(t *testing.T) {
	forEach(t, func(t *testing.T, srv *llmtest.Server, p llm.Provider) {
		photo := llmtest.WithEXIF(llmtest.Photo(4000, 3000), 1)
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			{Kind: llm.PartImage, Name: "board.jpg", MediaType: "image/jpeg", Data: photo},
		}}}}
		if _, err := p.Chat(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		images := srv.Requests()[0].Images()
		if len(images) != 1 || images[0].MediaType != "image/jpeg" || images[0].Role != "user" {
			t.Fatalf("images = %+v", images)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(images[0].Data))
		if err != nil {
			t.Fatal(err)
		}
		if bound := llm.MaxImageSide(p); max(cfg.Width, cfg.Height) != bound {
			t.Errorf("image arrived at %d×%d, want %d on its long side", cfg.Width, cfg.Height, bound)
		}
		if bytes.Contains(images[0].Data, []byte(llmtest.GPSPlace)) {
			t.Error("the photo's EXIF location reached the model")
		}
	})
}

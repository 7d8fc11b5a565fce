package offline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/offline"
)

func TestReplySaysNoModelAndEchoes(t *testing.T) {
	p := offline.New()
	if p.Name() != "offline" {
		t.Fatalf("Name() = %q", p.Name())
	}
	req := llm.Request{
		System: "be nice",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "first"},
			{Role: llm.RoleAssistant, Content: "ok"},
			{Role: llm.RoleUser, Content: "  read the file please  "},
		},
		Tools: []llm.Tool{{Name: "read_file", Parameters: []byte(`{"type":"object"}`)}},
	}
	var deltas strings.Builder
	resp, err := p.Chat(context.Background(), req, func(d llm.Delta) { deltas.WriteString(d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	if deltas.String() != resp.Text {
		t.Errorf("deltas %q differ from response text %q", deltas.String(), resp.Text)
	}
	for _, want := range []string{
		"No model is configured", "not a model",
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY",
		"127.0.0.1:11434", "$BATON_HOME/config.yaml",
		`"read the file please"`, "3 messages", "1 tool offered",
	} {
		if !strings.Contains(resp.Text, want) {
			t.Errorf("reply lacks %q:\n%s", want, resp.Text)
		}
	}
	if len(resp.ToolCalls) != 0 {
		t.Errorf("offline responder called tools: %+v", resp.ToolCalls)
	}
	if resp.Usage != (llm.Usage{}) {
		t.Errorf("offline responder reported usage %+v", resp.Usage)
	}
}

func TestLongInputIsShortenedAndEmptyIsNamed(t *testing.T) {
	p := offline.New()
	long := strings.Repeat("é", 1000)
	resp, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: long}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Text, long) || !strings.Contains(resp.Text, "…") {
		t.Errorf("long input not shortened")
	}
	resp, err = p.Chat(context.Background(), llm.Request{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Text, "Received no user message.") {
		t.Errorf("empty request not described:\n%s", resp.Text)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := offline.New().Chat(ctx, llm.Request{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestSetupOncePerConversation: the setup notice opens the first reply
// only; later replies say in one line that no model answers. Its last
// sentence is a paragraph of its own, not part of the last bullet.
func TestSetupOncePerConversation(t *testing.T) {
	p := offline.New()
	first, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Text, offline.Setup) || !strings.Contains(first.Text, "1 message in the conversation, 0 tools offered") {
		t.Fatalf("first reply:\n%s", first.Text)
	}
	if !strings.Contains(offline.Setup, "127.0.0.1:11434\n\nOr write") {
		t.Errorf("the last sentence follows the last bullet on the next line, so markdown joins them:\n%s", offline.Setup)
	}
	second, err := p.Chat(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "hi"},
		{Role: llm.RoleAssistant, Content: first.Text},
		{Role: llm.RoleUser, Content: "again"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(second.Text, "OPENAI_API_KEY") || !strings.HasPrefix(second.Text, offline.Reminder) || !strings.Contains(second.Text, `"again"`) {
		t.Errorf("second reply repeats the notice or lacks the reminder:\n%s", second.Text)
	}
}

func TestOfflineNamesTheFilesSent(t *testing.T) {
	resp, err := offline.Provider{}.Chat(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartImage, Name: "shot.png", MediaType: "image/png"}, {Kind: llm.PartText, MediaType: "text/plain"}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Text, "You sent 2 files (shot.png, text/plain)") {
		t.Errorf("reply %q", resp.Text)
	}
}

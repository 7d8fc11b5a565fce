package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Step is one scripted answer of the fake server: Reply, Fail or Disconnect.
type Step interface{ step() }

// Reply is a successful model answer. Text is streamed split by words so
// callers see several deltas; tool calls follow the text.
type Reply struct {
	Text      string
	ToolCalls []Call
	Usage     Usage         // zero: a rough estimate from the request size
	Delay     time.Duration // pause before each streamed chunk: a slow model
	// FirstToken is the pause before the first text chunk (on top of
	// Delay): a model's time to first token.
	FirstToken time.Duration
	// Wait, when set, holds the answer until it is closed (or the request
	// ends): a test decides when this request is answered.
	Wait <-chan struct{}
	// HoldEnd keeps a streamed body open this long after its last event
	// before ending it, as a proxy that flushes events ahead of the
	// stream's end does.
	HoldEnd time.Duration
}

// Call is a tool call in a Reply.
type Call struct {
	ID   string // empty: generated ("call_N" / "toolu_N")
	Name string
	Args string // JSON object text; empty means "{}"
}

// Usage is the token count a Reply reports.
type Usage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
}

// Fail answers with an HTTP error.
type Fail struct {
	Status     int    `json:"status"`
	RetryAfter string `json:"retry_after,omitempty"` // Retry-After header value, if any
	Body       string `json:"body,omitempty"`        // empty: the protocol's usual error JSON
}

// Disconnect streams the first After text chunks of Text, then cuts the
// connection without finishing the stream: a network drop mid-answer.
type Disconnect struct {
	Text  string `json:"text"`
	After int    `json:"after"`
}

func (Reply) step()      {}
func (Fail) step()       {}
func (Disconnect) step() {}

// scriptStep is the JSON form of a Step, for scripts handed to llmfake:
//
//	[{"text": "hi"},
//	 {"tool_calls": [{"name": "read_file", "args": {"path": "x"}}]},
//	 {"fail": {"status": 429, "retry_after": "1"}},
//	 {"disconnect": {"text": "half an answer", "after": 1}}]
type scriptStep struct {
	Text       string       `json:"text"`
	ToolCalls  []scriptCall `json:"tool_calls"`
	Usage      Usage        `json:"usage"`
	DelayMS    int          `json:"delay_ms"`
	FirstMS    int          `json:"first_token_ms"`
	Fail       *Fail        `json:"fail"`
	Disconnect *Disconnect  `json:"disconnect"`
}

type scriptCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"` // an object, or a string holding one
}

// ParseScript decodes a JSON list of steps (see scriptStep for the shape).
func ParseScript(data []byte) ([]Step, error) {
	var raw []scriptStep
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("llmtest: parse script: %w", err)
	}
	steps := make([]Step, 0, len(raw))
	for i, s := range raw {
		switch {
		case s.Fail != nil:
			steps = append(steps, *s.Fail)
		case s.Disconnect != nil:
			steps = append(steps, *s.Disconnect)
		default:
			r := Reply{Text: s.Text, Usage: s.Usage, Delay: time.Duration(s.DelayMS) * time.Millisecond, FirstToken: time.Duration(s.FirstMS) * time.Millisecond}
			for _, c := range s.ToolCalls {
				args := string(c.Args)
				var str string
				if json.Unmarshal(c.Args, &str) == nil {
					args = str
				}
				if args != "" {
					var b bytes.Buffer
					if err := json.Compact(&b, []byte(args)); err != nil {
						return nil, fmt.Errorf("llmtest: script step %d: tool call %q: args are not JSON: %w", i, c.Name, err)
					}
					args = b.String()
				}
				r.ToolCalls = append(r.ToolCalls, Call{ID: c.ID, Name: c.Name, Args: args})
			}
			steps = append(steps, r)
		}
	}
	return steps, nil
}

// LoadScript reads a script file written for ParseScript.
func LoadScript(path string) ([]Step, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llmtest: read script: %w", err)
	}
	return ParseScript(data)
}

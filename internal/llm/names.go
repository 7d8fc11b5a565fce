package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxWireName is the shorter of the two APIs' bounds (OpenAI's).
const maxWireName = 64

// ToolNames translates a request's tool names to what the APIs take and
// the model's calls back: "github.list_issues" goes as
// "github__list_issues". Names the APIs take already go as they are.
type ToolNames struct {
	toWire   map[string]string
	fromWire map[string]string
}

// NewToolNames maps the names of tools, each to a distinct wire name.
func NewToolNames(tools []Tool) *ToolNames {
	n := &ToolNames{toWire: map[string]string{}, fromWire: map[string]string{}}
	for _, t := range tools {
		w := WireName(t.Name)
		for i := 2; n.fromWire[w] != "" && n.fromWire[w] != t.Name; i++ {
			w = fit(WireName(t.Name), "_"+strconv.Itoa(i))
		}
		n.toWire[t.Name], n.fromWire[w] = w, t.Name
	}
	return n
}

// WireName is name as the APIs take it: "." becomes "__", anything else
// they refuse "_", and a name too long keeps its start and a hash.
func WireName(name string) string {
	if wireOK(name) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '.':
			b.WriteString("__")
		case r < 128 && wireByte(byte(r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	w := b.String()
	if w == "" {
		w = "_"
	}
	if len(w) > maxWireName {
		sum := sha256.Sum256([]byte(name))
		w = fit(w, "_"+hex.EncodeToString(sum[:4]))
	}
	return w
}

// wireOK reports whether both OpenAI's and Anthropic's APIs take name as
// a tool's (^[A-Za-z0-9_-]{1,64}$); baton's own names may say more
// ("github.list_issues"). A loop, not a regexp: this package is
// initialized by every baton command.
func wireOK(name string) bool {
	if name == "" || len(name) > maxWireName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !wireByte(name[i]) {
			return false
		}
	}
	return true
}

func wireByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// fit is w cut so that w+suffix stays within the bound.
func fit(w, suffix string) string {
	if len(w)+len(suffix) > maxWireName {
		w = w[:maxWireName-len(suffix)]
	}
	return w + suffix
}

// Wire is name as sent: the request's own mapping, or WireName for a
// name no tool of the request has (a call of a tool since removed).
func (n *ToolNames) Wire(name string) string {
	if w, ok := n.toWire[name]; ok {
		return w
	}
	return WireName(name)
}

// Name is the tool a wire name the model called stands for; a name the
// request did not send is kept as the model wrote it.
func (n *ToolNames) Name(wire string) string {
	if name, ok := n.fromWire[wire]; ok {
		return name
	}
	return wire
}

// Encode is req with every tool name as the APIs take it: the tools, the
// calls in its messages and the results answering them.
func (n *ToolNames) Encode(req Request) Request {
	tools := make([]Tool, len(req.Tools))
	for i, t := range req.Tools {
		t.Name = n.Wire(t.Name)
		tools[i] = t
	}
	req.Tools = tools
	msgs := make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		if len(m.ToolCalls) > 0 {
			calls := make([]ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Name = n.Wire(c.Name)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		if m.ToolName != "" {
			m.ToolName = n.Wire(m.ToolName)
		}
		msgs[i] = m
	}
	req.Messages = msgs
	return req
}

// Decode is resp with its calls named as baton names the tools.
func (n *ToolNames) Decode(resp Response) Response {
	if len(resp.ToolCalls) == 0 {
		return resp
	}
	calls := make([]ToolCall, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		c.Name = n.Name(c.Name)
		calls[i] = c
	}
	resp.ToolCalls = calls
	return resp
}

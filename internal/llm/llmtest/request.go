package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Wire protocols the server speaks, as reported by Request.Protocol.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   map[string]any // the decoded JSON body; nil if it was not JSON
	Raw    []byte
}

func (r Request) clone() Request {
	c := Request{Method: r.Method, Path: r.Path, Header: r.Header.Clone(), Raw: append([]byte(nil), r.Raw...)}
	// Decoding again is the simplest deep copy of a JSON tree; a body that
	// is not JSON stays nil.
	if json.Unmarshal(c.Raw, &c.Body) != nil {
		c.Body = nil
	}
	return c
}

// Protocol is ProtocolOpenAI or ProtocolAnthropic, from the path.
func (r Request) Protocol() string {
	if strings.HasSuffix(strings.TrimSuffix(r.Path, "/"), "/messages") {
		return ProtocolAnthropic
	}
	return ProtocolOpenAI
}

// Streamed reports whether the request asked for a stream.
func (r Request) Streamed() bool {
	b, _ := r.Body["stream"].(bool)
	return b
}

// Model is the model the request named.
func (r Request) Model() string {
	s, _ := r.Body["model"].(string)
	return s
}

// Messages is the request's messages array.
func (r Request) Messages() []any {
	m, _ := r.Body["messages"].([]any)
	return m
}

// LastUserText is the text of the latest user message that has any (tool
// results do not count), in either protocol's shape.
func (r Request) LastUserText() string {
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		if t := contentText(m["content"]); t != "" {
			return t
		}
	}
	return ""
}

// LastMessage is the role and text of the request's last message, in
// either protocol's shape: for a request that asks the model to go on
// from its own words, "assistant" and those words.
func (r Request) LastMessage() (role, text string) {
	msgs := r.Messages()
	if len(msgs) == 0 {
		return "", ""
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	role, _ = m["role"].(string)
	return role, contentText(m["content"])
}

// contentText joins the text parts of a content field: a plain string, or a
// list of parts/blocks of type "text".
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var out string
		for _, p := range c {
			pm, _ := p.(map[string]any)
			if pm["type"] == "text" {
				s, _ := pm["text"].(string)
				out += s
			}
		}
		return out
	}
	return ""
}

// sseWriter writes server-sent events, pacing them and cutting the stream
// where a Disconnect step asks.
type sseWriter struct {
	w     http.ResponseWriter
	ctx   context.Context
	delay time.Duration
	first time.Duration // before the first text chunk
	cut   int           // text chunks to send before hanging up; -1: never
	texts int
	dead  bool // client gone or cut point reached
}

// send writes one event (name "" for data-only events); false once the
// stream must stop.
func (s *sseWriter) send(name string, v any) bool {
	if s.dead {
		return false
	}
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			s.dead = true
			return false
		case <-t.C:
		}
	}
	var data []byte
	if raw, ok := v.(string); ok {
		data = []byte(raw)
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			panic(fmt.Sprintf("llmtest: marshal event: %v", err))
		}
	}
	if name != "" {
		_, _ = fmt.Fprintf(s.w, "event: %s\n", name)
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", data); err != nil {
		s.dead = true
		return false
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

// sendText is send for a text chunk, which counts toward the cut point.
func (s *sseWriter) sendText(name string, v any) bool {
	if s.cut >= 0 && s.texts >= s.cut {
		s.dead = true
		return false
	}
	if s.texts == 0 && !pause(s.ctx, s.first) {
		s.dead = true
		return false
	}
	s.texts++
	return s.send(name, v)
}

// cutting reports whether this stream ends in a hang-up, so writers stop
// once the text is out instead of finishing cleanly.
func (s *sseWriter) cutting() bool { return s.cut >= 0 }

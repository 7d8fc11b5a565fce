package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/baton-agent/baton/internal/llm/blob"
)

// maxErrorBody bounds how much of an error response is kept.
const maxErrorBody = 64 << 10

// exchange is the HTTP client of one Chat call. It hands the request to the
// shared client and keeps what the library would lose or garble: the
// status, headers and body of an error response (Retry-After and the
// server's own words, whatever shape its error body has), and the payload
// of an error event inside the stream.
type exchange struct {
	client           *http.Client
	fillEmptyContent bool       // the request has messages that need "content": ""
	files            []filePart // PDFs to write into the request's file placeholders
	blobs            *blob.Set  // the images' and PDFs' bytes, streamed into the body

	sent       bool // the request reached the HTTP client
	status     int  // 0: no response
	header     http.Header
	errorBody  []byte // of a response with status >= 400
	errorEvent []byte // data of the first stream event with an "error" member
}

// Do sends the request once.
func (ex *exchange) Do(req *http.Request) (*http.Response, error) {
	if ex.fillEmptyContent || len(ex.files) > 0 {
		if err := rewriteBody(req, ex.files); err != nil {
			return nil, err
		}
	}
	if ex.blobs != nil {
		if err := ex.blobs.Swap(req); err != nil {
			return nil, err
		}
	}
	ex.sent = true
	resp, err := ex.client.Do(req)
	if err != nil {
		return nil, err
	}
	ex.status, ex.header = resp.StatusCode, resp.Header
	if resp.StatusCode >= http.StatusBadRequest {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		ex.errorBody = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	resp.Body = &sseFilter{src: bufio.NewReaderSize(resp.Body, 1024), body: resp.Body, ex: ex}
	return resp, nil
}

// rewriteBody fixes what the library cannot say. It adds "content": "" to
// every message that has neither content nor tool calls: the library leaves
// empty content out (sashabaranov/go-openai#1029), and OpenAI, OpenRouter
// and DeepSeek reject a tool result or user turn without it, e.g. after
// reading an empty file. And it writes each PDF into its file part, a type
// the library does not know.
func rewriteBody(req *http.Request, files []filePart) error {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	var top map[string]json.RawMessage
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return fmt.Errorf("request messages: %w", err)
	}
	for _, m := range msgs {
		_, hasContent := m["content"]
		_, hasCalls := m["tool_calls"]
		if !hasContent && !hasCalls {
			m["content"] = json.RawMessage(`""`)
		}
		if len(files) > 0 && hasContent {
			if err := fillFiles(m, files); err != nil {
				return err
			}
		}
	}
	if top["messages"], err = json.Marshal(msgs); err != nil {
		return fmt.Errorf("request messages: %w", err)
	}
	if body, err = json.Marshal(top); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// fillFiles replaces the file placeholders in one message's content parts.
func fillFiles(m map[string]json.RawMessage, files []filePart) error {
	var content []map[string]json.RawMessage
	if json.Unmarshal(m["content"], &content) != nil {
		return nil // plain text content: no parts
	}
	changed := false
	for _, part := range content {
		var typ, text string
		_ = json.Unmarshal(part["type"], &typ)
		_ = json.Unmarshal(part["text"], &text)
		if typ != string(partTypeFile) {
			continue
		}
		i, err := strconv.Atoi(text)
		if err != nil || i < 0 || i >= len(files) {
			return fmt.Errorf("request body: file part %q has no file", text)
		}
		name := files[i].Name
		if name == "" {
			name = "document.pdf"
		}
		file, err := json.Marshal(map[string]string{"filename": name, "file_data": files[i].URL})
		if err != nil {
			return fmt.Errorf("request body: %w", err)
		}
		delete(part, "text")
		part["file"] = file
		changed = true
	}
	if !changed {
		return nil
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	m["content"] = raw
	return nil
}

// sseFilter passes the stream's data lines and blank lines on to the
// library and drops comments and other fields, which the library would
// append to an error buffer it never empties (OpenRouter sends a
// ": OPENROUTER PROCESSING" keep-alive every few seconds of a long answer).
// It also keeps the payload of an event with an "error" member, which the
// library reports in part (an object whose first member is "error") or not
// at all.
type sseFilter struct {
	src     *bufio.Reader
	body    io.Closer
	ex      *exchange
	pending []byte
	err     error
	done    bool // the stream's [DONE] event was read
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		var line []byte
		line, f.err = f.src.ReadBytes('\n')
		f.pending = f.pass(line)
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// drainWait bounds how long Close waits for the end of a finished stream.
const drainWait = time.Second

// Close reads what is left of a stream that finished with [DONE] (usually
// just the end of the chunked body, often still in flight) before closing
// it: the library stops reading at [DONE], and a body closed before its
// end takes its connection down with it, so the next call would open a
// new one. A stream cut short is closed at once.
func (f *sseFilter) Close() error {
	if f.done && f.err == nil {
		stop := time.AfterFunc(drainWait, func() { _ = f.body.Close() })
		_, _ = io.Copy(io.Discard, io.LimitReader(f.src, 64<<10))
		stop.Stop()
	}
	return f.body.Close()
}

// pass returns what of line goes on to the library.
func (f *sseFilter) pass(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return line // the end of an event
	}
	data, ok := bytes.CutPrefix(trimmed, []byte("data:"))
	if !ok {
		return nil
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		f.done = true
	}
	if f.ex.errorEvent == nil && isErrorEvent(data) {
		f.ex.errorEvent = bytes.TrimSpace(data)
	}
	return line
}

func isErrorEvent(data []byte) bool {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return false // the usual chunk, decided without decoding it
	}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(data, &v) == nil && len(v.Error) > 0
}

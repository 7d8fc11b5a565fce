package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
	"github.com/baton-agent/baton/internal/store"
)

// withPhoto runs a turn whose message carries a photo kept in the store.
func (e *env) withPhoto(sid string, photo []byte, text string) agent.Result {
	e.t.Helper()
	att, err := e.st.PutFile(context.Background(), bytes.NewReader(photo), "")
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.agent.Run(context.Background(), sid, store.Message{Role: store.RoleUser, Content: text, Attachments: []store.Attachment{att}}, func(agent.Event) {})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// Only the latest MaxImages pictures go whole; an older one is a line
// naming where the file tools read it.
func TestOlderImagesAreALine(t *testing.T) {
	e := newEnv(t)
	e.agent.MaxImages = 1
	first, second := llmtest.Photo(20, 10), llmtest.Photo(10, 20)
	e.srv.Push(llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"})
	e.withPhoto(e.sid, first, "first")
	e.withPhoto(e.sid, second, "second")
	reqs := e.srv.Requests()
	imgs := reqs[len(reqs)-1].Images()
	if len(imgs) != 1 || !bytes.Equal(imgs[0].Data, second) {
		t.Fatalf("the second turn sent %d images, want only the latest", len(imgs))
	}
	msgs := fmt.Sprint(reqs[len(reqs)-1].Messages())
	path := ""
	for _, m := range e.transcript(e.sid) {
		if len(m.Attachments) > 0 {
			path = store.SessionFileOf(context.Background(), e.st, e.sid, m.Attachments[0])
			break
		}
	}
	if !strings.Contains(msgs, "an earlier image, not sent again; read_file reads it at "+path) {
		t.Errorf("the older image's line is missing or names no path (%s):\n%s", path, msgs)
	}
}

// A model that takes no pictures gets each as a line, and the person is
// told so once: with the first picture of the session, not after.
func TestBlindModelToldOnce(t *testing.T) {
	e := newEnv(t)
	p, err := openai.New(openai.Config{BaseURL: e.srv.URL + "/v1", APIKey: "k", Model: "llama", NoImages: true})
	if err != nil {
		t.Fatal(err)
	}
	e.agent.Provider = p
	e.srv.Push(llmtest.Reply{Text: "no picture"}, llmtest.Reply{Text: "hello"}, llmtest.Reply{Text: "still none"})
	res := e.withPhoto(e.sid, llmtest.Photo(8, 8), "")
	if res.Notice != agent.BlindNotice {
		t.Errorf("first picture: notice %q", res.Notice)
	}
	reqs := e.srv.Requests()
	if n := len(reqs[0].Images()); n != 0 {
		t.Errorf("%d images sent to a model that takes none", n)
	}
	if msgs := fmt.Sprint(reqs[0].Messages()); !strings.Contains(msgs, "this model does not take pictures") {
		t.Errorf("the picture's line is missing:\n%s", msgs)
	}
	if res, _ := e.mustRun(e.sid, "hi"); res.Notice != "" {
		t.Errorf("a message without a picture: notice %q", res.Notice)
	}
	if res := e.withPhoto(e.sid, llmtest.Photo(9, 9), "another"); res.Notice != "" {
		t.Errorf("the second picture told again: %q", res.Notice)
	}
}

// PDFs go whole from the latest back while the request's whole bytes stay
// within its bound; an older one past it is a line, not sent again.
func TestOlderDocumentsPastTheBoundAreALine(t *testing.T) {
	e := newEnv(t)
	p, err := openai.New(openai.Config{BaseURL: e.srv.URL + "/v1", APIKey: "k", Model: "m", PDFFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	e.agent.Provider = p
	pdf := func(fill byte) []byte { return append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte{fill}, 12<<20)...) }
	first, second := pdf('a'), pdf('b')
	e.srv.Push(llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"})
	for _, doc := range [][]byte{first, second} {
		att, err := e.st.PutFile(context.Background(), bytes.NewReader(doc), "r.pdf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.agent.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Attachments: []store.Attachment{att}}, func(agent.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := e.srv.Requests()
	parts := reqs[len(reqs)-1].Parts()
	if len(parts) != 1 || !bytes.Equal(parts[0].Data, second) {
		t.Fatalf("the second turn sent %d documents whole, want only the latest", len(parts))
	}
	if msgs := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(msgs, "an earlier document, not sent again") {
		t.Errorf("the older document's line is missing")
	}
}

// A turn taken up again after a stop gives the files its tools had given
// before it (they are sent with the answer, which the stop cut off).
func TestResumedTurnKeepsItsFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	att, err := e.st.PutFile(ctx, strings.NewReader("the report"), "report.txt")
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := agent.EncodeToolCalls([]llm.ToolCall{{ID: "c1", Name: "send_file", Arguments: []byte(`{"path":"report.txt"}`)}})
	if _, err := e.st.AppendMessages(ctx, e.sid,
		store.Message{Role: store.RoleUser, Content: "send me the report"},
		store.Message{Role: store.RoleAssistant, ToolCalls: calls},
		store.Message{Role: store.RoleTool, ToolCallID: "c1", ToolName: "send_file", Content: "report.txt will be sent", Attachments: []store.Attachment{att}},
	); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(llmtest.Reply{Text: "Sent."})
	res, err := e.agent.Run(ctx, e.sid, store.Message{}, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Sent." || len(res.Files) != 1 || res.Files[0].SHA256 != att.SHA256 {
		t.Fatalf("resumed turn: %q with files %+v", res.Text, res.Files)
	}
}

// A file of the session, at the path its line names, is read by
// read_file without asking, as the working directory is; the same file
// shown in another session's folder is asked about.
func TestSessionFilesReadWithoutAsking(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ap := &scripted{}
	e.agent.Approver = ap
	att, err := e.st.PutFile(ctx, strings.NewReader("line one\nline two\n"), "notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	other := e.newSession()
	mine, err := e.st.SessionFile(ctx, e.sid, att)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := e.st.SessionFile(ctx, other, att)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mine, e.sid) || !strings.Contains(theirs, other) {
		t.Fatalf("session files at %s and %s", mine, theirs)
	}
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{call("read_file", fmt.Sprintf(`{"path":%q}`, mine))}},
		llmtest.Reply{ToolCalls: []llmtest.Call{call("read_file", fmt.Sprintf(`{"path":%q}`, theirs))}},
		llmtest.Reply{Text: "done"},
	)
	if _, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "read them", Attachments: []store.Attachment{att}}, func(agent.Event) {}); err != nil {
		t.Fatal(err)
	}
	if len(ap.asked) != 1 || !strings.Contains(ap.asked[0].Subject, other) {
		t.Fatalf("asked about %+v, want only the other session's file", ap.asked)
	}
	var results []string
	for _, m := range e.transcript(e.sid) {
		if m.Role == store.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], "line two") || results[1] != agent.DeniedResult {
		t.Errorf("results %q", results)
	}
}

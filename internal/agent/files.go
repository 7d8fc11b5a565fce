package agent

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// Bounds on what a turn sends the model of the files in its transcript.
const (
	// DefaultMaxImages is how many of the latest images a turn sends
	// whole; older ones are a line each (the model saw them when they
	// were new), so a long session does not resend every photo.
	DefaultMaxImages = 4
	// maxInlineText is how much of a text file is put in the message.
	maxInlineText = 64 << 10
	// maxWholeBytes bounds the bytes of the images and PDFs one request
	// sends whole (the latest first); past it they are a line each. 20 MB
	// is 27 MB in base64, inside the providers' request limits (Anthropic
	// takes 32 MB).
	maxWholeBytes = 20 << 20
)

// fileParts gives, for a person's message with attachments, the parts the
// model receives: images (the latest MaxImages of the transcript) and
// PDFs as themselves, text files inline up to a bound, and anything else
// — or anything the store cannot read back — as one line naming it. nil
// when the store keeps no files.
func (a *Agent) fileParts(ctx context.Context, sessionID string, msgs []store.Message, seesImages bool) func(store.Message) []llm.Part {
	files, ok := a.Store.(store.Files)
	if !ok {
		return nil
	}
	maxImages := a.MaxImages
	if maxImages == 0 {
		maxImages = DefaultMaxImages
	}
	// What is sent whole: the latest images, up to maxImages of them, and
	// the latest PDFs, counted from the end while the bytes sent whole stay
	// within maxWholeBytes (a provider refuses a larger request, and a
	// long session must not send every document again on every turn).
	whole := map[string]bool{}
	images, bytes := 0, int64(0)
	for i := len(msgs) - 1; i >= 0; i-- {
		if a.sent(msgs[i]) {
			continue
		}
		for j := len(msgs[i].Attachments) - 1; j >= 0; j-- {
			at := msgs[i].Attachments[j]
			switch {
			case isImage(at) && images < maxImages && bytes+at.Size <= maxWholeBytes:
				images++
			case isPDF(at) && bytes+at.Size <= maxWholeBytes:
			default:
				continue
			}
			bytes += at.Size
			whole[partKey(msgs[i], j)] = true
		}
	}
	return func(m store.Message) []llm.Part {
		if a.sent(m) {
			return nil // the person got them; the model knows what it sent
		}
		parts := make([]llm.Part, 0, len(m.Attachments))
		for j, at := range m.Attachments {
			p := llm.Part{Name: at.Name, MediaType: at.MediaType}
			switch {
			case at.Transcript != "":
				p.Kind, p.Text = llm.PartText, "["+transcript.VoiceLine(at)+"]"
			case at.Voice:
				p.Kind, p.Text = llm.PartText, a.describe(ctx, sessionID, at, "a voice note nobody transcribed")
			case isImage(at) && !seesImages:
				p.Kind, p.Text = llm.PartText, a.describe(ctx, sessionID, at, "this model does not take pictures")
			case isImage(at) && whole[partKey(m, j)]:
				p.Kind = llm.PartImage
				p.Data, p.Text = a.readFile(ctx, sessionID, files, at, -1)
			case isImage(at):
				p.Kind, p.Text = llm.PartText, a.describe(ctx, sessionID, at, "an earlier image, not sent again")
			case isPDF(at) && whole[partKey(m, j)]:
				p.Kind = llm.PartDocument
				p.Data, p.Text = a.readFile(ctx, sessionID, files, at, -1)
			case isPDF(at) && at.Size > maxWholeBytes:
				p.Kind, p.Text = llm.PartText, a.describe(ctx, sessionID, at, "too large to send the model whole")
			case isPDF(at):
				p.Kind, p.Text = llm.PartText, a.describe(ctx, sessionID, at, "an earlier document, not sent again")
			case isText(at):
				p.Kind = llm.PartText
				data, line := a.readFile(ctx, sessionID, files, at, maxInlineText)
				p.Text = line
				if line == "" {
					p.Text = fmt.Sprintf("[attached %s]\n%s", nameOf(at), data)
					if at.Size > maxInlineText {
						p.Text += fmt.Sprintf("\n[… cut at %d of %d bytes]", maxInlineText, at.Size)
					}
				}
			default:
				p.Kind, p.Text = llm.PartText, a.describe(ctx, sessionID, at, "not readable by this model")
			}
			if p.Kind != llm.PartText && p.Data == nil {
				p.Kind = llm.PartText // unreadable: the line stands in
			}
			parts = append(parts, p)
		}
		return parts
	}
}

// sent reports whether m is the result of a call that sent its files to
// the person (send_file), rather than a tool's output for the model.
func (a *Agent) sent(m store.Message) bool {
	return m.Role == store.RoleTool && a.Tools.Sends(m.ToolName)
}

// partKey names attachment j of m among the transcript's.
func partKey(m store.Message, j int) string { return fmt.Sprintf("%d/%d/%d", m.ID, m.Seq, j) }

func isImage(at store.Attachment) bool { return strings.HasPrefix(at.MediaType, "image/") }

func isPDF(at store.Attachment) bool { return at.MediaType == "application/pdf" }

func isText(at store.Attachment) bool {
	mt := at.MediaType
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

func nameOf(at store.Attachment) string {
	if at.Name != "" {
		return at.Name
	}
	return "a file"
}

// describe is the one line that stands in for a file, with where the
// file tools read it when the store keeps it on this machine.
func (a *Agent) describe(ctx context.Context, sessionID string, at store.Attachment, why string) string {
	if p := store.SessionFileOf(ctx, a.Store, sessionID, at); p != "" {
		why += "; read_file reads it at " + p
	}
	return fmt.Sprintf("[attached %s: %s, %s; %s]", nameOf(at), at.MediaType, plural.Size(at.Size), why)
}

// BlindNotice tells the person, once a session (Result.Notice), that the
// model does not see the pictures they send.
const BlindNotice = "(This model does not take pictures (config.yaml says model.images: false): it is told each " +
	"picture's name, type and size only. Name a model that sees them in model.name to change that.)"

// firstImage reports whether the last message of msgs, the person's, is
// the first of the session to carry a picture.
func firstImage(msgs []store.Message) bool {
	if len(msgs) == 0 || !hasImage(msgs[len(msgs)-1]) {
		return false
	}
	for _, m := range msgs[:len(msgs)-1] {
		if m.Role == store.RoleUser && hasImage(m) {
			return false
		}
	}
	return true
}

func hasImage(m store.Message) bool {
	for _, at := range m.Attachments {
		if isImage(at) {
			return true
		}
	}
	return false
}

// readFile reads an attachment's bytes back, at most limit of them (all
// for a negative limit); on failure it returns the line that stands in.
func (a *Agent) readFile(ctx context.Context, sessionID string, files store.Files, at store.Attachment, limit int64) ([]byte, string) {
	rc, err := files.OpenFile(ctx, at.SHA256)
	if err != nil {
		return nil, a.describe(ctx, sessionID, at, "could not be read back: "+err.Error())
	}
	defer rc.Close()
	var r io.Reader = rc
	if limit >= 0 {
		r = io.LimitReader(rc, limit)
	}
	// The size is known: one buffer of it, not the doublings of ReadAll
	// (a 20 MB PDF would pass through 32 MB of them).
	n := at.Size
	if limit >= 0 {
		n = min(n, limit)
	}
	data := make([]byte, 0, n+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // more than it said: grow
		}
		m, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, a.describe(ctx, sessionID, at, "could not be read back: "+err.Error())
		}
	}
	return data, ""
}

// filesSinceLastUser are the files the tool results after the person's
// last message carry to send (SendFile's, stored with their call's
// result), in order; their captions are not kept.
func (a *Agent) filesSinceLastUser(msgs []store.Message) []OutFile {
	var out []OutFile
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == store.RoleUser && m.Kind == "" {
			break
		}
		if !a.sent(m) {
			continue
		}
		for j := len(m.Attachments) - 1; j >= 0; j-- {
			out = append(out, OutFile{Attachment: m.Attachments[j]})
		}
	}
	slices.Reverse(out)
	return out
}

// inSessionFolder reports whether a path subject (absolute, every link
// resolved: SubjectPath) is in the session's own folder of files, which
// the file tools read as they read the working directory.
func (a *Agent) inSessionFolder(sessionID, subject string) bool {
	sf, ok := a.Store.(store.SessionFiler)
	if !ok || sessionID == "" || !filepath.IsAbs(subject) {
		return false
	}
	folder := sf.SessionFolder(sessionID)
	if real, err := filepath.EvalSymlinks(folder); err == nil {
		folder = real // subjects have every link resolved
	}
	rel, err := filepath.Rel(folder, subject)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Package formstream writes a multipart/form-data body as it is read:
// plain fields, and files streamed from their readers, never held whole.
// It is how baton uploads a file (to a chat service, to a transcription
// service) without holding it in memory.
package formstream

import (
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"
)

// Part is one part of a form: a field (Value) or a file (Body, with a
// Filename).
type Part struct {
	Name      string    // the form's field name
	Value     string    // a plain field's value; a field with none is left out
	Filename  string    // a file's name, as the part's header gives it
	MediaType string    // a file's Content-Type; "" is application/octet-stream
	Body      io.Reader // a file's bytes; nil for a plain field
}

// Field is a plain field.
func Field(name, value string) Part { return Part{Name: name, Value: value} }

// New returns the form's body, which writes the parts in order as it is
// read, and its Content-Type. A failure reading a file's Body ends the
// body with that error. Closing the body early (a request that ended)
// stops the writing.
func New(parts ...Part) (body io.ReadCloser, contentType string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(write(mw, parts)) }()
	return pr, mw.FormDataContentType()
}

func write(mw *multipart.Writer, parts []Part) error {
	for _, p := range parts {
		if p.Body == nil {
			if p.Value == "" {
				continue
			}
			if err := mw.WriteField(p.Name, p.Value); err != nil {
				return err
			}
			continue
		}
		media := p.MediaType
		if media == "" {
			media = "application/octet-stream"
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.Name, safeName(p.Filename)))
		h.Set("Content-Type", media)
		w, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, p.Body); err != nil {
			return err
		}
	}
	return mw.Close()
}

// safeName keeps a file name from breaking the part's header.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == '"' || r == '\\' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
}

package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// Transcription is a request to /v1/audio/transcriptions as the server
// received it: the multipart form's fields and its file.
type Transcription struct {
	Model, Language string
	Filename        string // the file part's name
	MediaType       string // the file part's Content-Type
	Data            []byte
	Auth            string // the Authorization header
}

// SetTranscriber makes f answer transcription requests: a Reply's Text is
// the transcript, a Fail fails the request. nil (the default) answers
// "voice note of N bytes".
func (s *Server) SetTranscriber(f func(Transcription) Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcriber = f
}

// Transcriptions returns the transcription requests received, in order.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transcription(nil), s.transcriptions...)
}

// serveTranscription answers POST /v1/audio/transcriptions as OpenAI's
// API does: a multipart form with "file" and "model", a JSON {"text"}.
func (s *Server) serveTranscription(w http.ResponseWriter, r *http.Request) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost || ct != "multipart/form-data" {
		writeFail(w, ProtocolOpenAI, Fail{Status: http.StatusBadRequest, Body: `{"error":{"message":"llmtest: a multipart POST is expected"}}`})
		return
	}
	tr := Transcription{Auth: r.Header.Get("Authorization")}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			writeFail(w, ProtocolOpenAI, Fail{Status: http.StatusBadRequest, Body: `{"error":{"message":"llmtest: bad multipart"}}`})
			return
		}
		data, _ := io.ReadAll(part)
		switch part.FormName() {
		case "file":
			tr.Filename, tr.MediaType, tr.Data = part.FileName(), part.Header.Get("Content-Type"), data
		case "model":
			tr.Model = string(data)
		case "language":
			tr.Language = string(data)
		}
	}
	if tr.Data == nil || tr.Model == "" {
		writeFail(w, ProtocolOpenAI, Fail{Status: http.StatusBadRequest, Body: `{"error":{"message":"file and model are required"}}`})
		return
	}
	s.mu.Lock()
	s.transcriptions = append(s.transcriptions, tr)
	f := s.transcriber
	s.mu.Unlock()
	step := Step(Reply{Text: fmt.Sprintf("voice note of %d bytes", len(tr.Data))})
	if f != nil {
		step = f(tr)
	}
	switch st := step.(type) {
	case Fail:
		writeFail(w, ProtocolOpenAI, st)
	case Reply:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"text": st.Text})
	default:
		writeFail(w, ProtocolOpenAI, Fail{Status: http.StatusInternalServerError})
	}
}

// isTranscription reports whether path is the transcription endpoint.
func isTranscription(path string) bool {
	return strings.HasSuffix(strings.TrimSuffix(path, "/"), "/audio/transcriptions")
}

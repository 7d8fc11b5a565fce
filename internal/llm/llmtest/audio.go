package llmtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
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

// VoiceNote is an Ogg Opus stream d long, as a phone records a voice
// note: the OpusHead and OpusTags pages, then a page every 200 ms of ten
// 20 ms packets of silence (the 3-byte CELT frame players decode as
// such), the granule positions giving the length.
func VoiceNote(d time.Duration) []byte {
	page := func(granule int64, seq uint32, packets ...[]byte) []byte {
		var segs, body []byte
		for _, p := range packets {
			n := len(p)
			for ; n >= 255; n -= 255 {
				segs = append(segs, 255)
			}
			segs = append(segs, byte(n))
			body = append(body, p...)
		}
		h := make([]byte, 27)
		copy(h, "OggS")
		if seq == 0 {
			h[5] = 0x02 // beginning of stream
		}
		binary.LittleEndian.PutUint64(h[6:], uint64(granule))
		binary.LittleEndian.PutUint32(h[14:], 7)
		binary.LittleEndian.PutUint32(h[18:], seq)
		h[26] = byte(len(segs))
		return append(append(h, segs...), body...)
	}
	head := []byte("OpusHead\x01\x01")
	head = binary.LittleEndian.AppendUint16(head, 312)
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0)
	f := page(0, 0, head)
	f = append(f, page(0, 1, []byte("OpusTags\x05\x00\x00\x00baton\x00\x00\x00\x00"))...)
	silence := []byte{0xF8, 0xFF, 0xFE}
	total := int64(d) * 48000 / int64(time.Second)
	var g int64
	for seq := uint32(2); g < total; seq++ {
		var packets [][]byte
		for range 10 {
			if g >= total {
				break
			}
			packets = append(packets, silence)
			g += 960 // 20 ms at 48 kHz
		}
		f = append(f, page(312+g, seq, packets...)...)
	}
	return f
}

// Speech is a request to /v1/audio/speech as the server received it.
type Speech struct {
	Model, Input, Voice, Format string
}

// Speeches returns the speech requests received, in order.
func (s *Server) Speeches() []Speech {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Speech(nil), s.speeches...)
}

// serveSpeech answers POST /v1/audio/speech as OpenAI's API does: a JSON
// body with model, input and voice; the audio itself back (a one-second
// VoiceNote, Ogg Opus, whatever format was asked).
func (s *Server) serveSpeech(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string `json:"model"`
		Input          string `json:"input"`
		Voice          string `json:"voice"`
		ResponseFormat string `json:"response_format"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" || req.Input == "" || req.Voice == "" {
		writeFail(w, ProtocolOpenAI, Fail{Status: http.StatusBadRequest, Body: `{"error":{"message":"model, input and voice are required"}}`})
		return
	}
	s.mu.Lock()
	s.speeches = append(s.speeches, Speech{Model: req.Model, Input: req.Input, Voice: req.Voice, Format: req.ResponseFormat})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "audio/ogg")
	_, _ = w.Write(VoiceNote(time.Second))
}

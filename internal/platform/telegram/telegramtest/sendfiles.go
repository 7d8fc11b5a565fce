package telegramtest

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Telegram's limits for files a bot sends: 10 MB for a photo, 50 MB for
// anything else, and 1024 characters of caption.
const (
	MaxPhotoUpload = 10 << 20
	MaxUpload      = 50 << 20
	MaxCaption     = 1024
)

// SentFile is a file the bot sent (sendPhoto, sendDocument) and the fake
// accepted.
type SentFile struct {
	Method    string // "sendPhoto", "sendDocument" or "sendVoice"
	ChatID    string
	ThreadID  int
	MessageID int
	Name      string // the upload's file name; Telegram keeps none for a photo
	MediaType string // the upload's Content-Type
	Data      []byte
	Caption   string // as a person sees it: tags stripped, entities decoded
}

// Voice reports whether the file shows as a voice message.
func (f SentFile) Voice() bool { return strings.EqualFold(f.Method, "sendVoice") }

// Photo reports whether the file shows as a photo.
func (f SentFile) Photo() bool { return strings.EqualFold(f.Method, "sendPhoto") }

// SentFiles returns the files the bot sent, in order.
func (s *Server) SentFiles() []SentFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentFile(nil), s.sentFiles...)
}

// sendFile answers sendPhoto and sendDocument with the file uploaded as
// multipart/form-data (a file_id or URL a bot may also give is refused:
// baton always uploads).
func (s *Server) sendFile(w http.ResponseWriter, r *http.Request, method string, p map[string]string) {
	field, limit := "document", int64(MaxUpload)
	switch {
	case strings.EqualFold(method, "sendPhoto"):
		field, limit = "photo", MaxPhotoUpload
	case strings.EqualFold(method, "sendVoice"):
		field = "voice"
	}
	chatID, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		s.reply(w, r, method, p, 400, "Bad Request: chat not found", 0, nil)
		return
	}
	f, ok, err := fakekit.FormFile(r, field)
	switch {
	case err != nil:
		s.reply(w, r, method, p, 400, "Bad Request: "+err.Error(), 0, nil)
		return
	case !ok:
		s.reply(w, r, method, p, 400, "Bad Request: there is no "+field+" in the request", 0, nil)
		return
	case len(f.Data) == 0:
		s.reply(w, r, method, p, 400, "Bad Request: file must be non-empty", 0, nil)
		return
	case int64(len(f.Data)) > limit:
		s.reply(w, r, method, p, 413, "Request Entity Too Large", 0, nil)
		return
	}
	caption := p["caption"]
	if caption != "" && strings.EqualFold(p["parse_mode"], "HTML") {
		if caption, err = CheckHTML(caption); err != nil {
			s.reply(w, r, method, p, 400, "Bad Request: can't parse entities: "+err.Error(), 0, nil)
			return
		}
	}
	if platform.UTF16Len(caption) > MaxCaption {
		s.reply(w, r, method, p, 400, "Bad Request: message caption is too long", 0, nil)
		return
	}
	thread, _ := strconv.Atoi(p["message_thread_id"])
	s.mu.Lock()
	c := s.chat(chatID)
	if thread != 0 && !s.topicExists(p["chat_id"], thread) {
		s.mu.Unlock()
		s.reply(w, r, method, p, 400, "Bad Request: message thread not found", 0, nil)
		return
	}
	s.nextMsg++
	id := s.nextMsg
	sent := SentFile{Method: method, ChatID: p["chat_id"], ThreadID: thread, MessageID: id, MediaType: f.MediaType, Data: f.Data, Caption: caption}
	if field == "document" {
		sent.Name = f.Name
	}
	s.sentFiles = append(s.sentFiles, sent)
	s.Changed()
	s.mu.Unlock()
	msg := map[string]any{
		"message_id": id, "date": time.Now().Unix(),
		"chat": map[string]any{"id": c.ID, "type": c.Type},
		"from": map[string]any{"id": s.botID, "is_bot": true, "first_name": "baton", "username": s.botTag},
	}
	if caption != "" {
		msg["caption"] = caption
	}
	if thread != 0 {
		msg["message_thread_id"] = thread
		msg["is_topic_message"] = true
	}
	if field == "voice" {
		msg["voice"] = map[string]any{"file_id": "sent" + strconv.Itoa(id), "file_unique_id": "u" + strconv.Itoa(id), "duration": 1, "mime_type": "audio/ogg", "file_size": len(f.Data)}
	} else if field == "photo" {
		msg["photo"] = []map[string]any{{"file_id": "sent" + strconv.Itoa(id), "file_unique_id": "u" + strconv.Itoa(id), "width": 1, "height": 1, "file_size": len(f.Data)}}
	} else {
		msg["document"] = map[string]any{"file_id": "sent" + strconv.Itoa(id), "file_unique_id": "u" + strconv.Itoa(id), "file_name": f.Name, "file_size": len(f.Data)}
	}
	fakekit.Annotate(r, "message "+strconv.Itoa(id))
	s.reply(w, r, method, p, 200, "", 0, msg)
}

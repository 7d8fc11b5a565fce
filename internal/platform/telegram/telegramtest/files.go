package telegramtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/baton-agent/baton/internal/platform/fakekit"
	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// MaxDownload is the largest file getFile lets a bot download: larger
// ones answer 400 "file is too big", as Telegram's servers do.
const MaxDownload = 20 << 20

// File kinds: the Message field a file is sent in.
const (
	Photo     = "photo"
	Document  = "document"
	Voice     = "voice"
	VideoNote = "video_note"
	Audio     = "audio"
	Video     = "video"
)

// File is a file a person sends (PushFile).
type File struct {
	Kind     string // Photo, Document, Voice, VideoNote, Audio or Video
	Name     string // file_name (documents, audio, video); none for the others
	MimeType string // mime_type, for the kinds that carry one
	Data     []byte
	Caption  string
	// Size is the file_size Telegram tells, when a test wants it to
	// differ from len(Data): a file over MaxDownload is sent without
	// holding its bytes. 0 tells len(Data).
	Size int64
	// Width and Height of a photo or video; default 1280×960.
	Width, Height int
}

// storedFile is a file the fake keeps for getFile and the download route.
type storedFile struct {
	id, unique, path string
	size             int64
	data             []byte
}

// kindDirs are the folders Telegram's file_path puts each kind in.
var kindDirs = map[string]string{
	Photo: "photos", Document: "documents", Voice: "voice", VideoNote: "video_notes", Audio: "music", Video: "videos",
}

// PushPhoto sends a photo (with an optional caption), as Telegram does:
// in several sizes, a small thumbnail first and data as the largest.
func (s *Server) PushPhoto(chatID int64, thread int, from User, data []byte, caption string) (updateID int64, messageID int) {
	return s.PushFile(chatID, thread, from, File{Kind: Photo, Data: data, Caption: caption})
}

// PushDocument sends a file as a document, with its name and claimed type.
func (s *Server) PushDocument(chatID int64, thread int, from User, name, mimeType string, data []byte, caption string) (updateID int64, messageID int) {
	return s.PushFile(chatID, thread, from, File{Kind: Document, Name: name, MimeType: mimeType, Data: data, Caption: caption})
}

// PushVoice sends a voice message (OGG/Opus, as Telegram's apps record).
func (s *Server) PushVoice(chatID int64, thread int, from User, data []byte) (updateID int64, messageID int) {
	return s.PushFile(chatID, thread, from, File{Kind: Voice, MimeType: "audio/ogg", Data: data})
}

// PushFile sends a message carrying f, described as Telegram's Message
// describes it (file_id, file_unique_id, file_size; file_path only from
// getFile), and returns its update and message ids.
func (s *Server) PushFile(chatID int64, thread int, from User, f File) (updateID int64, messageID int) {
	if f.Width == 0 || f.Height == 0 {
		f.Width, f.Height = 1280, 960
	}
	s.mu.Lock()
	s.nextMsg++
	messageID = s.nextMsg
	c := s.chat(chatID)
	s.mu.Unlock()
	m := s.message(c, thread, from, "", messageID)
	delete(m, "text")
	if f.Caption != "" {
		m["caption"] = f.Caption
	}
	desc := s.keep(f.Kind, f.Name, f.Data, f.Size)
	switch f.Kind {
	case Photo:
		thumb := s.keep(Photo, "", []byte("thumbnail of "+desc["file_unique_id"].(string)), 0)
		thumb["width"], thumb["height"] = 90, 90*f.Height/f.Width
		desc["width"], desc["height"] = f.Width, f.Height
		m[Photo] = []map[string]any{thumb, desc}
	case Document, Audio, Video, Voice, VideoNote:
		if f.Name != "" && f.Kind != Voice && f.Kind != VideoNote {
			desc["file_name"] = f.Name
		}
		if f.MimeType != "" && f.Kind != VideoNote {
			desc["mime_type"] = f.MimeType
		}
		switch f.Kind {
		case Audio, Voice:
			desc["duration"] = 3
		case VideoNote:
			desc["duration"], desc["length"] = 3, 240
		case Video:
			desc["duration"], desc["width"], desc["height"] = 3, f.Width, f.Height
		}
		m[f.Kind] = desc
	default:
		s.tb.Errorf("telegramtest: no file kind %q", f.Kind)
	}
	s.conform("Message", m)
	return s.PushUpdate(map[string]any{"message": m}), messageID
}

// keep stores data as a file of kind and returns its description (the
// fields every file object has). The unique id follows the bytes, as the
// same file sent twice keeps its file_unique_id on Telegram.
func (s *Server) keep(kind, name string, data []byte, size int64) map[string]any {
	if size == 0 {
		size = int64(len(data))
	}
	sum := sha256.Sum256(data)
	unique := "AQAD" + base64.RawURLEncoding.EncodeToString(sum[:9])
	ext := map[string]string{Photo: ".jpg", Voice: ".oga", VideoNote: ".mp4", Video: ".mp4", Audio: ".mp3"}[kind]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i:]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*storedFile{}
	}
	n := len(s.files)
	f := &storedFile{
		id:     "BQACAgIAAxkBAAI" + strconv.Itoa(1000+n) + unique,
		unique: unique,
		path:   kindDirs[kind] + "/file_" + strconv.Itoa(n) + ext,
		size:   size,
		data:   data,
	}
	s.files[f.id] = f
	return map[string]any{"file_id": f.id, "file_unique_id": f.unique, "file_size": f.size}
}

// Downloads counts the requests for file bytes (the download route),
// answered or not: a file refused before download leaves it unchanged.
func (s *Server) Downloads() int {
	n := 0
	for _, c := range s.Server.Calls() {
		if c.Method == downloadMethod {
			n++
		}
	}
	return n
}

// downloadMethod names the download route in the call log; FailNext and
// Unsupported take it like a method.
const downloadMethod = "GET /file"

// getFile answers as Telegram does: the File with its file_path, or 400
// for an unknown id or a file over MaxDownload.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	f := s.files[p["file_id"]]
	s.mu.Unlock()
	switch {
	case f == nil:
		s.reply(w, r, "getFile", p, 400, "Bad Request: invalid file_id", 0, nil)
	case f.size > MaxDownload:
		s.reply(w, r, "getFile", p, 400, "Bad Request: file is too big", 0, nil)
	default:
		res := map[string]any{"file_id": f.id, "file_unique_id": f.unique, "file_size": f.size, "file_path": f.path}
		s.conform("File", res)
		fakekit.Annotate(r, f.path)
		s.reply(w, r, "getFile", p, 200, "", 0, res)
	}
}

// download serves /file/bot<token>/<file_path>; anything else answers
// 404, as Telegram's file server does.
func (s *Server) download(w http.ResponseWriter, r *http.Request, rest string) {
	token, path, ok := strings.Cut(rest, "/")
	s.mu.Lock()
	var f *storedFile
	for _, sf := range s.files {
		if sf.path == path {
			f = sf
		}
	}
	s.mu.Unlock()
	if !ok || token != s.token || f == nil || r.Method != http.MethodGet {
		writeAnswer(w, http.StatusNotFound, "Not Found", 0, nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data)
}

// conform fails the test when v, which the fake hands out as a Bot API
// type, is not one by Telegram's description (when it is at hand).
func (s *Server) conform(typ string, v any) {
	api, _ := loadBotAPI()
	if api == nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		s.tb.Errorf("telegramtest: %s: %v", typ, err)
		return
	}
	decoded, err := apispec.Decode(data)
	if err != nil {
		s.tb.Errorf("telegramtest: %s: %v", typ, err)
		return
	}
	if why := api.fitsJSON(typ, decoded); why != "" {
		s.tb.Errorf("telegramtest: the fake hands out a %s that %s does not describe: %s", typ, api.Version, why)
	}
}

package discordtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// RouteCDN is a download of an attachment from the CDN (a fake-only
// route: Discord's CDN is another host, not its REST API).
const RouteCDN = "CDN Attachment"

// MaxUpload is Discord's default upload limit: a larger file is answered
// 413 Request entity too large (code 40005).
const MaxUpload = 10 << 20

// cdnBase is where the fake's CDN sits on its server.
const cdnBase = "/cdn"

// File is a file a person sends, for SayFile.
type File struct {
	Name        string
	ContentType string // as the sender's app claims; Discord passes it on
	Data        []byte
	// Size is the size the message tells, when it must differ from
	// len(Data) (a file over a limit said without its bytes); 0 tells
	// len(Data).
	Size    int64
	Caption string // the message's content; "" for a file alone
	// Voice makes it a voice message recorded in the app, this long:
	// Discord gives it a waveform and its length (and flags the message).
	Voice time.Duration
}

// Attachment is a file a message carries, as the fake keeps it.
type Attachment struct {
	ID          string
	Filename    string
	ContentType string // as Discord gives it: from the file name's extension
	Data        []byte
	Size        int64
	channel     string
}

// IsImage reports whether Discord shows the attachment as a picture.
func (a Attachment) IsImage() bool {
	switch a.ContentType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// CDNURL is the CDN base to configure the adapter with (Config.CDNURL).
func (s *Server) CDNURL() string { return s.URL() + cdnBase }

// Downloads counts the requests for attachments' bytes from the CDN so
// far.
func (s *Server) Downloads() int { return s.CallCount(RouteCDN) }

// SayFile makes a person send a file in a channel, as a message whose
// attachments list it (the CDN serves its bytes at the URL given there),
// and returns the message's id.
func (s *Server) SayFile(channelID string, from User, f File) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[channelID]
	if !ok {
		return "", fmt.Errorf("discordtest: no channel %s", channelID)
	}
	id := s.newID()
	s.authors[id] = from.ID
	att := s.keepLocked(c.ID, f.Name, f.ContentType, f.Data)
	if f.Size > 0 {
		att.Size = f.Size
	}
	msg := s.messageJSON(c, id, from, false, f.Caption)
	aj := s.attachmentJSON(att)
	if f.Voice > 0 {
		aj["duration_secs"] = f.Voice.Seconds()
		aj["waveform"] = "AAAAAAAAAAAA"
		msg["flags"] = 1 << 13 // IS_VOICE_MESSAGE
	}
	msg["attachments"] = []any{aj}
	s.dispatchLocked("MESSAGE_CREATE", msg, c, false)
	s.history[c.ID] = append(s.history[c.ID], restMessage(msg))
	s.Changed()
	return id, nil
}

// keepLocked stores a file for the CDN to serve; s.mu held.
func (s *Server) keepLocked(channel, name, contentType string, data []byte) *Attachment {
	if s.stored == nil {
		s.stored = map[string]*Attachment{}
	}
	a := &Attachment{ID: s.newID(), Filename: name, ContentType: contentType, Data: data, Size: int64(len(data)), channel: channel}
	s.stored[a.ID] = a
	return a
}

// attachmentJSON is an attachment as a message gives it, with its signed
// CDN URL.
func (s *Server) attachmentJSON(a *Attachment) map[string]any {
	p := fmt.Sprintf("%s/attachments/%s/%s/%s", cdnBase, a.channel, a.ID, url.PathEscape(a.Filename))
	ex := strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 16)
	u := s.URL() + p + "?ex=" + ex + "&is=" + ex + "&hm=" + s.sign(p, ex) + "&"
	m := map[string]any{"id": a.ID, "filename": a.Filename, "size": a.Size, "url": u, "proxy_url": u}
	if a.ContentType != "" {
		m["content_type"] = a.ContentType
	}
	return m
}

func (s *Server) sign(p, ex string) string {
	mac := hmac.New(sha256.New, []byte(s.token))
	mac.Write([]byte(p + "\x00" + ex))
	return hex.EncodeToString(mac.Sum(nil))
}

// serveCDN answers a download as Discord's CDN does: the bytes for a
// URL signed as a message gave it, "This content is no longer
// available." for anything else. The CDN takes no token: a request that
// sends the bot's fails the test.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		s.tb.Errorf("discordtest: a CDN download carried an Authorization header")
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, cdnBase+"/attachments/"), "/")
	q := r.URL.Query()
	s.mu.Lock()
	var a *Attachment
	if len(parts) == 3 {
		a = s.stored[parts[1]]
	}
	s.mu.Unlock()
	p := r.URL.EscapedPath()
	if a == nil || a.channel != parts[0] || !hmac.Equal([]byte(q.Get("hm")), []byte(s.sign(p, q.Get("ex")))) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "This content is no longer available.")
		return
	}
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.Data)))
	_, _ = w.Write(a.Data)
}

// messageBody is what a create or edit carries, as JSON or as a
// multipart form's payload_json.
type messageBody struct {
	Content         *string         `json:"content"`
	AllowedMentions json.RawMessage `json:"allowed_mentions"`
	Nonce           json.RawMessage `json:"nonce"`
	EnforceNonce    bool            `json:"enforce_nonce"`
	Attachments     []struct {
		ID       json.RawMessage `json:"id"`
		Filename string          `json:"filename"`
	} `json:"attachments"`
}

// errTooLarge is a file over MaxUpload.
var errTooLarge = errors.New("Request entity too large")

// readMessage reads a create or edit's body: JSON, or multipart/form-data
// with payload_json and files[n] parts (each named by the attachments
// entry whose id is n, else by its own filename), as Discord takes it.
func readMessage(r *http.Request) (messageBody, []File, error) {
	var body messageBody
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		err := json.NewDecoder(r.Body).Decode(&body)
		return body, nil, err
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	files := map[int]File{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return body, nil, err
		}
		name := part.FormName()
		data, err := io.ReadAll(io.LimitReader(part, MaxUpload+1))
		if err != nil {
			return body, nil, err
		}
		switch {
		case name == "payload_json":
			if err := json.Unmarshal(data, &body); err != nil {
				return body, nil, err
			}
		case strings.HasPrefix(name, "files[") && strings.HasSuffix(name, "]"):
			n, err := strconv.Atoi(name[len("files[") : len(name)-1])
			if err != nil || part.FileName() == "" {
				return body, nil, fmt.Errorf("bad file part %q", name)
			}
			if len(data) > MaxUpload {
				return body, nil, errTooLarge
			}
			files[n] = File{Name: part.FileName(), Data: data}
		}
	}
	var out []File
	for n := 0; n < len(files); n++ {
		f, ok := files[n]
		if !ok {
			return body, nil, fmt.Errorf("files[%d] missing", n)
		}
		for _, a := range body.Attachments {
			if strings.Trim(string(a.ID), `"`) == strconv.Itoa(n) && a.Filename != "" {
				f.Name = a.Filename
			}
		}
		// Discord types a file by its name, whatever the part said.
		f.ContentType = mime.TypeByExtension(path.Ext(f.Name))
		out = append(out, f)
	}
	return body, out, nil
}

// multipartProblems holds a multipart/form-data body against what the
// description takes for the operation: payload_json is checked as a JSON
// body would be, every other part must be one of the form's fields
// (files[0]…files[9]).
func multipartProblems(api *apispec.OpenAPI, op *apispec.Operation, r *http.Request) []apispec.Problem {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		return nil
	}
	schema := dig(api.Root(), "paths", op.Path, strings.ToLower(op.Method), "requestBody", "content", "multipart/form-data", "schema")
	if schema == nil {
		return []apispec.Problem{{Kind: apispec.BadType, Msg: "multipart bodies are not taken by " + op.Method + " " + op.Path}}
	}
	props := api.Properties(schema)
	body, err := apispec.Body(r)
	if err != nil {
		return []apispec.Problem{{Kind: apispec.Invalid, Msg: "body unreadable: " + err.Error()}}
	}
	var out []apispec.Problem
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return append(out, apispec.Problem{Kind: apispec.Invalid, Msg: "multipart body: " + err.Error()})
		}
		name := part.FormName()
		switch {
		case name == "payload_json":
			data, _ := io.ReadAll(part)
			v, err := apispec.Decode(data)
			if err != nil {
				out = append(out, apispec.Problem{Path: []string{name}, Kind: apispec.BadType, Msg: "is not JSON: " + err.Error()})
				continue
			}
			out = append(out, api.Validate(schema, v)...)
			if obj, ok := v.(map[string]any); ok && props != nil {
				for k := range obj {
					if !props[k] {
						out = append(out, apispec.Problem{Path: []string{k}, Kind: apispec.Unknown, Msg: "is not a field of " + op.Method + " " + op.Path})
					}
				}
			}
		case props != nil && props[name]:
		default:
			out = append(out, apispec.Problem{Path: []string{name}, Kind: apispec.Unknown, Msg: "is not a field of " + op.Method + " " + op.Path})
		}
	}
}

// dig follows keys through nested JSON objects; nil where one is absent.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

package slacktest

import (
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

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// The fake-only routes files use, as the kit names them: the file host's
// downloads (files.slack.com/files-pri/…) and the upload URLs
// files.getUploadURLExternal hands out. Neither is a Web API method.
const (
	RouteDownload = "download"
	RouteUpload   = "upload"
)

// MaxFile is Slack's limit on one file: 1 GB.
const MaxFile = 1 << 30

// File is a file a person shares, for PushFile.
type File struct {
	Name     string
	Mimetype string // as the sender's app claims it
	Data     []byte
	// Size is the size the event tells, when it must differ from
	// len(Data) (a file over a limit said without its bytes); 0 tells
	// len(Data).
	Size int64
}

// Shared is a file the bot shared (files.completeUploadExternal), as
// people see it.
type Shared struct {
	FileID   string
	Channel  string
	ThreadTS string // "" at the top level
	TS       string // the message showing it
	Name     string // the file name given to files.getUploadURLExternal
	Title    string
	Mimetype string // as Slack types it, by its name
	Data     []byte
	Comment  string // initial_comment as sent
}

// IsImage reports whether Slack shows the file as a picture.
func (f Shared) IsImage() bool {
	switch f.Mimetype {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// slackFile is a file the fake keeps: a person's, or one the bot
// uploads (its bytes come to its upload URL, then it is completed).
type slackFile struct {
	id, name, title, mimetype, user string
	data                            []byte
	size                            int64
	length                          int64 // the length getUploadURLExternal was told
	uploaded, completed             bool
	created                         int64
	shares                          []Shared
}

// FilesURL is the file host to configure the adapter with
// (Config.FilesURL): url_private_download points there.
func (s *Server) FilesURL() string { return s.URL() }

// Downloads counts the requests for files' bytes from the file host so
// far.
func (s *Server) Downloads() int { return s.CallCount(RouteDownload) }

// Shares returns the files the bot shared, in order.
func (s *Server) Shares() []Shared {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Shared
	for _, id := range s.fileOrder {
		out = append(out, s.files[id].shares...)
	}
	return sortShares(out)
}

// Uploads counts the files the bot asked upload URLs for.
func (s *Server) Uploads() int { return s.CallCount("files.getUploadURLExternal") }

func sortShares(list []Shared) []Shared {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].TS < list[j-1].TS; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	return list
}

// newFileLocked keeps a file; s.mu held.
func (s *Server) newFileLocked(f *slackFile) *slackFile {
	if s.files == nil {
		s.files = map[string]*slackFile{}
	}
	s.nextFile++
	f.id = fmt.Sprintf("F%08d", s.nextFile)
	f.created = s.clock / 1_000_000
	s.files[f.id] = f
	s.fileOrder = append(s.fileOrder, f.id)
	return f
}

// fileJSON is a file as events and the Web API give it.
func (s *Server) fileJSON(f *slackFile) map[string]any {
	base := fmt.Sprintf("%s/files-pri/%s-%s/", s.FilesURL(), TeamID, f.id)
	name := url.PathEscape(f.name)
	m := map[string]any{
		"id": f.id, "created": f.created, "timestamp": f.created, "name": f.name, "title": f.title,
		"mimetype": f.mimetype, "filetype": strings.TrimPrefix(path.Ext(f.name), "."), "user": f.user,
		"user_team": TeamID, "editable": false, "size": f.size, "mode": "hosted", "is_external": false,
		"external_type": "", "is_public": true, "public_url_shared": false, "display_as_bot": false,
		"url_private": base + name, "url_private_download": base + "download/" + name,
		"permalink": fmt.Sprintf("https://baton-test.slack.com/files/%s/%s/%s", f.user, f.id, name),
	}
	if len(f.shares) > 0 {
		shares := map[string]any{}
		for _, sh := range f.shares {
			vis := "public"
			if channelType(sh.Channel) != "channel" {
				vis = "private"
			}
			byChannel, _ := shares[vis].(map[string]any)
			if byChannel == nil {
				byChannel = map[string]any{}
				shares[vis] = byChannel
			}
			entry := map[string]any{"ts": sh.TS, "channel_name": sh.Channel, "team_id": TeamID, "share_user_id": f.user, "source": "UNKNOWN"}
			if sh.ThreadTS != "" {
				entry["thread_ts"] = sh.ThreadTS
			}
			list, _ := byChannel[sh.Channel].([]any)
			byChannel[sh.Channel] = append(list, entry)
		}
		m["shares"] = shares
	}
	return m
}

// PushFile makes a person share a file, with m.Text as its message: a
// message event of subtype file_share goes out over Socket Mode, its
// file downloadable from the file host with the bot token. It returns the
// message's ts and the event's envelope id.
func (s *Server) PushFile(m Message, f File) (ts, envelopeID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts = s.ts()
	s.authors[m.Channel+":"+ts] = m.User
	ct := m.ChannelType
	if ct == "" {
		ct = channelType(m.Channel)
	}
	kept := s.newFileLocked(&slackFile{name: f.Name, title: f.Name, mimetype: f.Mimetype, user: m.User,
		data: f.Data, size: int64(len(f.Data)), uploaded: true, completed: true})
	if f.Size > 0 {
		kept.size = f.Size
	}
	kept.shares = []Shared{{FileID: kept.id, Channel: m.Channel, ThreadTS: m.ThreadTS, TS: ts, Name: f.Name, Title: f.Name, Mimetype: f.Mimetype, Data: f.Data}}
	ev := map[string]any{
		"type": "message", "subtype": "file_share", "channel": m.Channel, "channel_type": ct, "user": m.User,
		"text": m.Text, "ts": ts, "event_ts": ts, "team": TeamID, "upload": false, "display_as_bot": false,
		"files": []any{s.fileJSON(kept)},
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	s.recordLocked(m.Channel, ev)
	return ts, s.queueLocked("events_api", s.callback(ev))
}

// WithoutFilesScope makes the file host answer downloads as for a bot
// token without the files:read scope: with the redirect to the sign-in
// page a request without a token gets.
func (s *Server) WithoutFilesScope() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noFiles = true
}

// serveDownload answers the file host as Slack does: a file's bytes for
// a request with the bot token, a redirect to the sign-in page without.
func (s *Server) serveDownload(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	noScope := s.noFiles
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.botToken || noScope {
		http.Redirect(w, r, "https://baton-test.slack.com/?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
		return
	}
	// /files-pri/<team>-<file>/download/<name>
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/files-pri/"), "/")
	id := ""
	if len(parts) > 0 {
		_, id, _ = strings.Cut(parts[0], "-")
	}
	s.mu.Lock()
	f := s.files[id]
	s.mu.Unlock()
	if f == nil || !f.completed {
		http.NotFound(w, r)
		return
	}
	if f.mimetype != "" {
		w.Header().Set("Content-Type", f.mimetype)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data)
}

// getUploadURL answers files.getUploadURLExternal: a file id, and where
// its bytes go.
func (s *Server) getUploadURL(w http.ResponseWriter, p map[string]string) {
	length, err := strconv.ParseInt(p["length"], 10, 64)
	switch {
	case p["filename"] == "" || err != nil || length <= 0:
		fail(w, "invalid_arguments")
		return
	case length > MaxFile:
		fail(w, "file_too_large")
		return
	}
	s.mu.Lock()
	f := s.newFileLocked(&slackFile{name: p["filename"], title: p["filename"], user: BotUserID, length: length,
		mimetype: mimeOf(p["filename"])})
	s.mu.Unlock()
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "upload_url": s.URL() + "/upload/v1/" + f.id, "file_id": f.id})
}

// mimeOf types a file by its name, as Slack does.
func mimeOf(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// serveUpload takes a file's bytes at its upload URL: the raw body, or a
// multipart form's "file" part, as Slack takes either. It answers "OK -
// <length>" as Slack does.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
	data, err := uploadedBytes(r)
	if err != nil {
		http.Error(w, "bad upload: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f := s.files[id]
	switch {
	case f == nil || f.completed:
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	case int64(len(data)) != f.length:
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("length %d, not the %d announced", len(data), f.length), http.StatusBadRequest)
		return
	}
	f.data, f.size, f.uploaded = data, int64(len(data)), true
	s.Changed()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = fmt.Fprintf(w, "OK - %d", len(data))
}

func uploadedBytes(r *http.Request) ([]byte, error) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		return io.ReadAll(io.LimitReader(r.Body, MaxFile+1))
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, errors.New(`no "file" part`)
		}
		if err != nil {
			return nil, err
		}
		if part.FormName() == "file" {
			return io.ReadAll(io.LimitReader(part, MaxFile+1))
		}
	}
}

// completeUpload answers files.completeUploadExternal: each file, its
// bytes uploaded, is shared in channel_id (in thread_ts's thread), the
// message carrying initial_comment; people (and the bot, over Socket
// Mode) see that message.
func (s *Server) completeUpload(w http.ResponseWriter, p map[string]string) {
	var list []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(p["files"]), &list); err != nil || len(list) == 0 {
		fail(w, "invalid_arguments")
		return
	}
	channel, thread := p["channel_id"], p["thread_ts"]
	if thread != "" && channel == "" {
		fail(w, "invalid_arguments")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range list {
		if f := s.files[e.ID]; f == nil || !f.uploaded || f.completed || f.user != BotUserID {
			fail(w, "file_not_found")
			return
		}
	}
	var out []any
	var done []*slackFile
	for _, e := range list {
		f := s.files[e.ID]
		f.completed = true
		if e.Title != "" {
			f.title = e.Title
		}
		out = append(out, map[string]any{"id": f.id, "title": f.title})
		done = append(done, f)
	}
	if channel != "" {
		share := func() { s.shareLocked(done, channel, thread, p["initial_comment"]) }
		if s.holdShares {
			s.held = append(s.held, share)
		} else {
			share()
		}
	}
	s.Changed()
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "files": out})
}

// HoldShares makes completed uploads wait to be shared until
// ReleaseShares, as Slack shares them in the background: meanwhile
// files.info finds each file, shared nowhere.
func (s *Server) HoldShares() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdShares = true
}

// ReleaseShares shares the uploads held, and no longer holds any.
func (s *Server) ReleaseShares() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, share := range s.held {
		share()
	}
	s.held, s.holdShares = nil, false
	s.Changed()
}

// shareLocked shows completed files in a channel (in thread's thread)
// in one message carrying comment; s.mu held.
func (s *Server) shareLocked(files []*slackFile, channel, thread, comment string) {
	ts := s.ts()
	s.authors[channel+":"+ts] = BotUserID
	var shown []any
	for _, f := range files {
		f.shares = append(f.shares, Shared{FileID: f.id, Channel: channel, ThreadTS: thread, TS: ts, Name: f.name,
			Title: f.title, Mimetype: f.mimetype, Data: f.data, Comment: comment})
		shown = append(shown, s.fileJSON(f))
	}
	ev := map[string]any{
		"type": "message", "subtype": "file_share", "channel": channel, "channel_type": channelType(channel),
		"user": BotUserID, "bot_id": BotID, "text": comment, "ts": ts, "event_ts": ts, "team": TeamID,
		"upload": true, "display_as_bot": false, "files": shown,
	}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	s.recordLocked(channel, ev)
	s.queueLocked("events_api", s.callback(ev))
}

// fileInfo answers files.info: a file completed, with where it is shared.
func (s *Server) fileInfo(w http.ResponseWriter, p map[string]string) {
	s.mu.Lock()
	f := s.files[p["file"]]
	var file map[string]any
	if f != nil && f.completed {
		file = s.fileJSON(f)
	}
	s.mu.Unlock()
	if file == nil {
		fail(w, "file_not_found")
		return
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "file": file, "comments": []any{},
		"response_metadata": map[string]any{"next_cursor": ""}})
}

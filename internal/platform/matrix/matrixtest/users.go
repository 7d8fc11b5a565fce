package matrixtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// User is an account on the homeserver, acting as a person does in a
// client such as Element.
type User struct {
	ID    string // @name:localhost
	Token string
	hs    *Homeserver
	txn   atomic.Int64
}

// Register creates a new account whose name starts with name (a suffix
// keeps it unique on this server), through open registration.
func (h *Homeserver) Register(ctx context.Context, name string) (*User, error) {
	local := fmt.Sprintf("%s%d", strings.ToLower(name), h.users.Add(1))
	var resp struct {
		UserID      string `json:"user_id"`
		AccessToken string `json:"access_token"`
	}
	err := call(ctx, h.url, "", http.MethodPost, "/_matrix/client/v3/register", map[string]any{
		"username": local, "password": "pw-" + local + "-0123456789",
		"auth":                        map[string]any{"type": "m.login.dummy"},
		"inhibit_login":               false,
		"initial_device_display_name": "baton test",
	}, &resp)
	if err != nil {
		return nil, fmt.Errorf("register %s: %w", local, err)
	}
	return &User{ID: resp.UserID, Token: resp.AccessToken, hs: h}, nil
}

// CallError is an error answer of the homeserver.
type CallError struct {
	Status  int
	ErrCode string `json:"errcode"`
	Message string `json:"error"`
}

func (e *CallError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.ErrCode, e.Message) }

// call makes one JSON request of the client-server API.
func call(ctx context.Context, base, token, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		e := &CallError{Status: resp.StatusCode}
		_ = json.Unmarshal(data, e)
		return e
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (u *User) call(ctx context.Context, method, path string, body, out any) error {
	return call(ctx, u.hs.url, u.Token, method, path, body, out)
}

func esc(s string) string { return url.PathEscape(s) }

// CreateRoom makes a private, unencrypted room named name and invites
// the given users.
func (u *User) CreateRoom(ctx context.Context, name string, invite ...string) (string, error) {
	if invite == nil {
		invite = []string{}
	}
	var resp struct {
		RoomID string `json:"room_id"`
	}
	err := u.call(ctx, http.MethodPost, "/_matrix/client/v3/createRoom", map[string]any{
		"name": name, "preset": "private_chat", "invite": invite,
	}, &resp)
	if err != nil {
		return "", fmt.Errorf("create room %q: %w", name, err)
	}
	return resp.RoomID, nil
}

// Invite invites user to room.
func (u *User) Invite(ctx context.Context, room, user string) error {
	return u.call(ctx, http.MethodPost, "/_matrix/client/v3/rooms/"+esc(room)+"/invite", map[string]any{"user_id": user}, nil)
}

// Join joins room (it must be invited, or the room public).
func (u *User) Join(ctx context.Context, room string) error {
	return u.call(ctx, http.MethodPost, "/_matrix/client/v3/join/"+esc(room), map[string]any{}, nil)
}

// Members are the ids of room's joined members.
func (u *User) Members(ctx context.Context, room string) ([]string, error) {
	var resp struct {
		Joined map[string]any `json:"joined"`
	}
	if err := u.call(ctx, http.MethodGet, "/_matrix/client/v3/rooms/"+esc(room)+"/joined_members", nil, &resp); err != nil {
		return nil, err
	}
	var ids []string
	for id := range resp.Joined {
		ids = append(ids, id)
	}
	return ids, nil
}

// Membership is user's membership in room as this user sees it ("join",
// "invite", "leave", or "" if none).
func (u *User) Membership(ctx context.Context, room, user string) (string, error) {
	var resp struct {
		Membership string `json:"membership"`
	}
	err := u.call(ctx, http.MethodGet, "/_matrix/client/v3/rooms/"+esc(room)+"/state/m.room.member/"+esc(user), nil, &resp)
	if e, ok := err.(*CallError); ok && e.Status == http.StatusNotFound {
		return "", nil
	}
	return resp.Membership, err
}

// send puts one event and returns its id.
func (u *User) send(ctx context.Context, room, typ string, content map[string]any) (string, error) {
	var resp struct {
		EventID string `json:"event_id"`
	}
	txn := strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(u.txn.Add(1), 10)
	err := u.call(ctx, http.MethodPut, "/_matrix/client/v3/rooms/"+esc(room)+"/send/"+esc(typ)+"/"+txn, content, &resp)
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", room, err)
	}
	return resp.EventID, nil
}

// Say posts text in room's main timeline.
func (u *User) Say(ctx context.Context, room, text string) (string, error) {
	return u.send(ctx, room, "m.room.message", map[string]any{"msgtype": "m.text", "body": text})
}

// SayInThread posts text in the thread rooted at root the way Element
// does: an m.thread relation, falling back to a reply to the thread's
// newest event (replyTo; root if "") for clients without threads.
func (u *User) SayInThread(ctx context.Context, room, root, replyTo, text string) (string, error) {
	if replyTo == "" {
		replyTo = root
	}
	return u.send(ctx, room, "m.room.message", map[string]any{
		"msgtype": "m.text", "body": text,
		"m.relates_to": map[string]any{
			"rel_type": "m.thread", "event_id": root, "is_falling_back": true,
			"m.in_reply_to": map[string]any{"event_id": replyTo},
		},
	})
}

// Send posts any message content (for odd cases: notices, edits).
func (u *User) Send(ctx context.Context, room string, content map[string]any) (string, error) {
	return u.send(ctx, room, "m.room.message", content)
}

// Message is a message event as a client shows it: edits applied.
type Message struct {
	EventID       string
	Sender        string
	Body          string // the newest text, edits applied
	FormattedBody string
	Format        string
	Thread        string // the thread root's event id when in a thread
	InReplyTo     string
	FallingBack   bool
	Edits         int // how many times it was edited
	Mentions      bool
	Time          time.Time
	Raw           json.RawMessage // the original event
}

type wireMessage struct {
	EventID string          `json:"event_id"`
	Sender  string          `json:"sender"`
	Type    string          `json:"type"`
	TS      int64           `json:"origin_server_ts"`
	Content json.RawMessage `json:"content"`
}

type wireContent struct {
	Body          string `json:"body"`
	Format        string `json:"format"`
	FormattedBody string `json:"formatted_body"`
	RelatesTo     *struct {
		RelType       string `json:"rel_type"`
		EventID       string `json:"event_id"`
		IsFallingBack bool   `json:"is_falling_back"`
		InReplyTo     *struct {
			EventID string `json:"event_id"`
		} `json:"m.in_reply_to"`
	} `json:"m.relates_to"`
	NewContent *struct {
		Body          string `json:"body"`
		Format        string `json:"format"`
		FormattedBody string `json:"formatted_body"`
	} `json:"m.new_content"`
	Mentions *struct {
		UserIDs []string `json:"user_ids"`
		Room    bool     `json:"room"`
	} `json:"m.mentions"`
}

// Messages is every message in room, oldest first, as a client shows
// them: an edit (m.replace) changes the message it edits and is not a
// message of its own.
func (u *User) Messages(ctx context.Context, room string) ([]Message, error) {
	var all []wireMessage
	from := ""
	for {
		q := url.Values{"dir": {"b"}, "limit": {"100"}}
		if from != "" {
			q.Set("from", from)
		}
		var resp struct {
			Chunk []wireMessage `json:"chunk"`
			End   string        `json:"end"`
		}
		if err := u.call(ctx, http.MethodGet, "/_matrix/client/v3/rooms/"+esc(room)+"/messages?"+q.Encode(), nil, &resp); err != nil {
			return nil, fmt.Errorf("messages of %s: %w", room, err)
		}
		all = append(all, resp.Chunk...)
		if len(resp.Chunk) == 0 || resp.End == "" || resp.End == from {
			break
		}
		from = resp.End
	}
	var out []Message
	index := map[string]int{}
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		w := all[i]
		if w.Type != "m.room.message" {
			continue
		}
		var c wireContent
		if err := json.Unmarshal(w.Content, &c); err != nil {
			continue
		}
		if c.RelatesTo != nil && c.RelatesTo.RelType == "m.replace" {
			if j, ok := index[c.RelatesTo.EventID]; ok && c.NewContent != nil && out[j].Sender == w.Sender {
				out[j].Body, out[j].Format, out[j].FormattedBody = c.NewContent.Body, c.NewContent.Format, c.NewContent.FormattedBody
				out[j].Edits++
			}
			continue
		}
		m := Message{EventID: w.EventID, Sender: w.Sender, Body: c.Body, Format: c.Format, FormattedBody: c.FormattedBody,
			Time: time.UnixMilli(w.TS), Raw: append(json.RawMessage(nil), all[i].Content...)}
		if c.RelatesTo != nil {
			if c.RelatesTo.RelType == "m.thread" {
				m.Thread, m.FallingBack = c.RelatesTo.EventID, c.RelatesTo.IsFallingBack
			}
			if c.RelatesTo.InReplyTo != nil {
				m.InReplyTo = c.RelatesTo.InReplyTo.EventID
			}
		}
		m.Mentions = c.Mentions != nil && (c.Mentions.Room || len(c.Mentions.UserIDs) > 0)
		index[m.EventID] = len(out)
		out = append(out, m)
	}
	return out, nil
}

// SyncedAfter reports whether a /sync from since, as this user, still
// returns the event id: false once since is past it.
func (u *User) SyncedAfter(ctx context.Context, since, eventID string) (bool, error) {
	q := url.Values{"since": {since}, "timeout": {"0"}}
	var resp struct {
		Rooms struct {
			Join map[string]struct {
				Timeline struct {
					Events []struct {
						EventID string `json:"event_id"`
					} `json:"events"`
				} `json:"timeline"`
			} `json:"join"`
		} `json:"rooms"`
	}
	if err := u.call(ctx, http.MethodGet, "/_matrix/client/v3/sync?"+q.Encode(), nil, &resp); err != nil {
		return false, err
	}
	for _, r := range resp.Rooms.Join {
		for _, e := range r.Timeline.Events {
			if e.EventID == eventID {
				return true, nil
			}
		}
	}
	return false, nil
}

// World is one test's people on a shared homeserver: an owner, the bot
// baton logs in as, a stranger, and a room the owner made (the home) that
// the other two joined.
type World struct {
	Owner, Bot, Stranger *User
	Room                 string
}

// NewWorld registers fresh users and makes their room, so tests sharing
// a homeserver never see each other.
func (h *Homeserver) NewWorld(ctx context.Context) (*World, error) {
	w := &World{}
	var err error
	if w.Owner, err = h.Register(ctx, "owner"); err != nil {
		return nil, err
	}
	if w.Bot, err = h.Register(ctx, "bot"); err != nil {
		return nil, err
	}
	if w.Stranger, err = h.Register(ctx, "stranger"); err != nil {
		return nil, err
	}
	if w.Room, err = w.Owner.CreateRoom(ctx, "baton home", w.Bot.ID, w.Stranger.ID); err != nil {
		return nil, err
	}
	for _, u := range []*User{w.Stranger, w.Bot} {
		if err := u.Join(ctx, w.Room); err != nil {
			return nil, fmt.Errorf("%s joins %s: %w", u.ID, w.Room, err)
		}
	}
	return w, nil
}

// Upload puts data in the homeserver's media repository as Element does
// (POST /_matrix/media/v3/upload) and returns its mxc:// URI.
func (u *User) Upload(ctx context.Context, name, mediaType string, data []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		u.hs.url+"/_matrix/media/v3/upload?"+url.Values{"filename": {name}}.Encode(), bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mediaType)
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	defer resp.Body.Close()
	var out struct {
		ContentURI string `json:"content_uri"`
	}
	if resp.StatusCode != http.StatusOK {
		e := &CallError{Status: resp.StatusCode}
		_ = json.NewDecoder(resp.Body).Decode(e)
		return "", fmt.Errorf("upload %s: %w", name, e)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	return out.ContentURI, nil
}

// SayFile sends a file in room (in the thread rooted at thread, if set)
// as Element does: uploaded, then an m.file message whose body is the
// caption and filename the name, or body the name when there is no
// caption. size is the size info tells; 0 tells len(data).
func (u *User) SayFile(ctx context.Context, room, thread, name, mediaType, caption string, data []byte, size int64) (string, error) {
	mxc, err := u.Upload(ctx, name, mediaType, data)
	if err != nil {
		return "", err
	}
	if size == 0 {
		size = int64(len(data))
	}
	body := name
	if caption != "" {
		body = caption
	}
	content := map[string]any{"msgtype": "m.file", "body": body, "filename": name, "url": mxc,
		"info": map[string]any{"mimetype": mediaType, "size": size}}
	if thread != "" {
		content["m.relates_to"] = map[string]any{"rel_type": "m.thread", "event_id": thread, "is_falling_back": true,
			"m.in_reply_to": map[string]any{"event_id": thread}}
	}
	return u.send(ctx, room, "m.room.message", content)
}

// Download reads an mxc:// URI's bytes through authenticated media, as
// a client shows a file.
func (u *User) Download(ctx context.Context, mxc string) ([]byte, error) {
	server, mediaID, ok := strings.Cut(strings.TrimPrefix(mxc, "mxc://"), "/")
	if !ok || !strings.HasPrefix(mxc, "mxc://") {
		return nil, fmt.Errorf("download %q: not an mxc:// URI", mxc)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.hs.url+"/_matrix/client/v1/media/download/"+esc(server)+"/"+esc(mediaID), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", mxc, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download %s: %s", mxc, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// File is a file message as a client shows it.
type File struct {
	Message
	MsgType  string // m.image, m.file, m.audio, m.video
	Name     string // filename, or body when there is none
	Caption  string // body when filename is set and differs from it
	URL      string // mxc://
	MimeType string
	Size     int64
	W, H     int
}

// FileOf reads m as a file message; ok is false for one that is not.
func FileOf(m Message) (f File, ok bool) {
	var c struct {
		MsgType  string `json:"msgtype"`
		Body     string `json:"body"`
		FileName string `json:"filename"`
		URL      string `json:"url"`
		Info     struct {
			MimeType string `json:"mimetype"`
			Size     int64  `json:"size"`
			W        int    `json:"w"`
			H        int    `json:"h"`
		} `json:"info"`
	}
	if json.Unmarshal(m.Raw, &c) != nil {
		return f, false
	}
	switch c.MsgType {
	case "m.image", "m.file", "m.audio", "m.video":
	default:
		return f, false
	}
	f = File{Message: m, MsgType: c.MsgType, Name: c.Body, URL: c.URL, MimeType: c.Info.MimeType, Size: c.Info.Size, W: c.Info.W, H: c.Info.H}
	if c.FileName != "" {
		f.Name = c.FileName
		if c.Body != c.FileName {
			f.Caption = c.Body
		}
	}
	return f, true
}

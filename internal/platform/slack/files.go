package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/baton-agent/baton/internal/platform"
)

// MaxDownload is the largest file Slack keeps: 1 GB.
const MaxDownload = 1 << 30

// MaxUpload is the largest file Slack takes, by the same rule: 1 GB.
const MaxUpload = 1 << 30

// DefaultFilesURL is Slack's file host, where url_private_download
// points.
const DefaultFilesURL = "https://files.slack.com"

// display is how people know the service, in refusals.
const display = "Slack"

// MaxDownload is 1 GB (see the constant).
func (a *Adapter) MaxDownload() int64 { return MaxDownload }

// MaxUpload is 1 GB (see the constant).
func (a *Adapter) MaxUpload() int64 { return MaxUpload }

// wireFile is the part of a message's file baton reads.
type wireFile struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Mimetype           string `json:"mimetype"`
	Size               int64  `json:"size"`
	Mode               string `json:"mode"` // "hosted", "external", "tombstone" (deleted), "hidden_by_limit"…
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
	// Subtype "slack_audio" is an audio clip recorded in Slack (the
	// event tells it; the Web API client used for catch-up does not).
	Subtype string `json:"subtype"`
}

// wireFiles is the files of a message the Web API gave (catch-up).
func wireFiles(files []slack.File) []wireFile {
	var out []wireFile
	for _, f := range files {
		out = append(out, wireFile{ID: f.ID, Name: f.Name, Mimetype: f.Mimetype, Size: int64(f.Size), Mode: f.Mode,
			URLPrivate: f.URLPrivate, URLPrivateDownload: f.URLPrivateDownload})
	}
	return out
}

// opener makes the Open of a file described as label; nil makes
// attachments without one (for tests of decoding alone).
type opener func(f wireFile, label string) func(context.Context) (io.ReadCloser, error)

// opener reads files through this adapter (see download).
func (a *Adapter) opener(f wireFile, label string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, f, label) }
}

// attachments lists a message's files; a deleted one (a tombstone) is
// left out.
func attachments(files []wireFile, open opener) []platform.Attachment {
	var out []platform.Attachment
	for _, f := range files {
		if f.ID == "" || f.Mode == "tombstone" {
			continue
		}
		kind := platform.KindDocument
		switch {
		case (platform.File{MediaType: f.Mimetype}).IsImage():
			kind = platform.KindPhoto
		case f.Subtype == "slack_audio":
			kind = platform.KindVoice
		}
		label := f.Name
		if label == "" {
			label = "the " + string(kind)
		}
		att := platform.Attachment{Kind: kind, Name: f.Name, MediaType: f.Mimetype, Size: f.Size, ID: f.ID}
		if open != nil {
			att.Open = open(f, label)
		}
		out = append(out, att)
	}
	return out
}

// download reads a file from its url_private_download with the bot token
// (Slack's files need it, and the files:read scope), only when that URL
// is on Slack's file host (Config.FilesURL): the token goes nowhere else.
// A file over MaxDownload is refused first. Slack answers a request it
// does not let through with its sign-in page, by a redirect or at once:
// neither is taken for the file.
func (a *Adapter) download(ctx context.Context, f wireFile, label string) (io.ReadCloser, error) {
	if err := platform.CheckDownload(display, label, f.Size, MaxDownload); err != nil {
		return nil, err
	}
	src := f.URLPrivateDownload
	if src == "" {
		src = f.URLPrivate
	}
	switch {
	case f.Mode == "hidden_by_limit":
		return nil, platform.Permanent(fmt.Errorf("slack: download %s: Slack keeps it out of reach (older than the workspace's plan shows)", label))
	case f.Mode == "external":
		return nil, platform.Permanent(fmt.Errorf("slack: download %s: it is kept outside Slack", label))
	case !a.onFileHost(src):
		return nil, platform.Permanent(fmt.Errorf("slack: download %s: it is not on Slack's file host", label))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, platform.Permanent(fmt.Errorf("slack: download %s: %w", label, err))
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.BotToken)
	client := *a.http
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack: download %s: %w", label, err)
	}
	signIn := resp.StatusCode >= 300 && resp.StatusCode < 400 ||
		resp.StatusCode == http.StatusOK && isHTML(resp.Header.Get("Content-Type")) && !isHTML(f.Mimetype)
	switch {
	case signIn:
		resp.Body.Close()
		return nil, platform.Permanent(fmt.Errorf("slack: download %s: Slack answered with its sign-in page (give the app the files:read scope)", label))
	case resp.StatusCode == http.StatusTooManyRequests:
		resp.Body.Close()
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return nil, platform.RetryAfter(max(time.Duration(wait)*time.Second, time.Second), fmt.Errorf("slack: download %s: %s", label, resp.Status))
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		err := fmt.Errorf("slack: download %s: %s", label, resp.Status)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout {
			return nil, platform.Permanent(err)
		}
		return nil, err
	}
	return platform.LimitDownload(resp.Body, display, label, MaxDownload), nil
}

func isHTML(contentType string) bool {
	t, _, _ := mime.ParseMediaType(contentType)
	return t == "text/html"
}

// onFileHost reports whether raw is on Slack's file host.
func (a *Adapter) onFileHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Scheme, a.files.Scheme) && strings.EqualFold(u.Host, a.files.Host) &&
		strings.HasPrefix(u.EscapedPath(), strings.TrimRight(a.files.EscapedPath(), "/")+"/")
}

// deliveriesKey is where Config.Memory keeps the messages and files of
// stored deliveries tried (see Send and SendFile); maxDeliveriesKept
// bounds how many it remembers: a delivery is tried again within
// minutes, or after a restart, not after a hundred others.
const (
	deliveriesKey     = "deliveries"
	maxDeliveriesKept = 128
)

// tried is a message of a stored delivery (its DeliveryToken) sent to
// Slack, and the file it uploaded ("" for text).
type tried struct {
	Token string `json:"token"`
	File  string `json:"file,omitempty"`
}

// SendFile shares a file in a place, with its caption as the message's
// text, through Slack's external upload: files.getUploadURLExternal,
// the bytes to the URL it gave, then files.completeUploadExternal into
// the channel (and thread). Slack drops no repeated upload, so a file of
// a stored delivery is remembered (Config.Memory) before its bytes go:
// the delivery tried again — after a lost answer, or by baton restarted
// mid-send — finds that file shared (files.info) and gives its message
// back instead of sharing it twice (Send does the same for text). It returns the ts of the message
// showing the file (its file id when Slack does not tell the ts yet).
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	if err := check(to); err != nil {
		return "", err
	}
	if err := platform.CheckUpload(display, f, MaxUpload); err != nil {
		return "", err
	}
	name := f.UploadName()
	what := "send " + name + " to " + to.Key()
	switch {
	case f.Size <= 0:
		return "", fmt.Errorf("slack: %s: Slack takes no empty file: %w", what, platform.ErrPermanent)
	case f.Open == nil:
		return "", fmt.Errorf("slack: %s: nothing to read it from: %w", what, platform.ErrPermanent)
	}
	token, keyed := platform.DeliveryToken(ctx, to, 0, tokenLen)
	if keyed {
		prior, _, err := a.wasTried(ctx, token)
		if err != nil {
			return "", fmt.Errorf("slack: %s: %w", what, err)
		}
		if prior != "" {
			ts, found, err := a.sharedAt(ctx, prior, to)
			switch {
			case err != nil:
				return "", classify(what, err)
			case found && ts != "":
				return ts, nil // shared by an earlier try
			case found:
				// Slack has it and shares it in the background.
				return "", fmt.Errorf("slack: %s: Slack is still sharing it", what)
			}
			// Never completed: its bytes did not all go; upload anew.
		}
	}

	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	u, err := a.api.GetUploadURLExternalContext(cctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: int(f.Size)})
	cancel()
	if err != nil {
		return "", classify(what, err)
	}
	if keyed {
		if err := a.remember(ctx, tried{Token: token, File: u.FileID}); err != nil {
			return "", fmt.Errorf("slack: %s: %w", what, err)
		}
	}
	rc, err := f.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("slack: %s: read it: %w", what, err)
	}
	body := &counter{r: io.LimitReader(rc, f.Size+1)}
	cctx, cancel = context.WithTimeout(ctx, platform.UploadTimeout(a.cfg.RequestTimeout, f.Size))
	err = a.api.UploadToURL(cctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: body, Filename: name})
	cancel()
	rc.Close()
	if err != nil {
		return "", classify(what, err)
	}
	if body.n != f.Size {
		return "", fmt.Errorf("slack: %s: it was %d bytes, not the %d it said: %w", what, body.n, f.Size, platform.ErrPermanent)
	}
	cctx, cancel = context.WithTimeout(ctx, a.cfg.RequestTimeout)
	_, err = a.api.CompleteUploadExternalContext(cctx, slack.CompleteUploadExternalParameters{
		Files:           []slack.FileSummary{{ID: u.FileID, Title: name}},
		Channel:         to.Chat,
		ThreadTimestamp: to.Thread,
		InitialComment:  renderMrkdwn(f.Caption),
	})
	cancel()
	if err != nil {
		return "", classify(what, err)
	}
	// Shared: whatever files.info says, the file is shown.
	if ts, _, err := a.sharedAt(ctx, u.FileID, to); err == nil && ts != "" {
		return ts, nil
	}
	return u.FileID, nil
}

// counter counts what is read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// tokenLen is how many hex digits of a DeliveryToken stand for a
// message of a delivery here.
const tokenLen = 32

// wasTried reports whether a message of a stored delivery was sent to
// Slack before, and the file it uploaded.
func (a *Adapter) wasTried(ctx context.Context, token string) (file string, ok bool, err error) {
	a.keptMu.Lock()
	defer a.keptMu.Unlock()
	list, err := a.triedLocked(ctx)
	if err != nil {
		return "", false, err
	}
	for _, t := range list {
		if t.Token == token {
			return t.File, true, nil
		}
	}
	return "", false, nil
}

// remember keeps that a message of a stored delivery goes to Slack (and
// the file it uploads), before it goes, in place of what an earlier try
// kept, dropping the oldest past maxDeliveriesKept. Without
// Config.Memory it is kept for this run only.
func (a *Adapter) remember(ctx context.Context, t tried) error {
	a.keptMu.Lock()
	defer a.keptMu.Unlock()
	list, err := a.triedLocked(ctx)
	if err != nil {
		return err
	}
	list = slices.DeleteFunc(list, func(x tried) bool { return x.Token == t.Token })
	list = append(list, t)
	if len(list) > maxDeliveriesKept {
		list = list[len(list)-maxDeliveriesKept:]
	}
	if a.cfg.Memory == nil {
		a.kept = list
		return nil
	}
	b, _ := json.Marshal(list)
	if err := a.cfg.Memory.Set(ctx, deliveriesKey, string(b)); err != nil {
		return fmt.Errorf("keep the delivery tried: %w", err)
	}
	return nil
}

// triedLocked reads what was kept; a.keptMu held. Memory is read each
// time: another adapter (before a restart) may have written it.
func (a *Adapter) triedLocked(ctx context.Context) ([]tried, error) {
	if a.cfg.Memory == nil {
		return append([]tried(nil), a.kept...), nil
	}
	v, err := a.cfg.Memory.Get(ctx, deliveriesKey)
	if err != nil {
		return nil, fmt.Errorf("read the deliveries tried: %w", err)
	}
	var list []tried
	if v != "" {
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			a.log.Warn("slack: the deliveries tried are unreadable; starting afresh", "err", err)
			return nil, nil
		}
	}
	return list, nil
}

// sharedAt asks files.info where a file is shown: found is false when
// Slack has no such file (an upload never completed), ts is "" while it
// is not shared in to's channel yet.
func (a *Adapter) sharedAt(ctx context.Context, fileID string, to platform.Address) (ts string, found bool, err error) {
	var info struct {
		File struct {
			Shares map[string]map[string][]struct {
				TS       string `json:"ts"`
				ThreadTS string `json:"thread_ts"`
			} `json:"shares"`
		} `json:"file"`
	}
	err = a.rawCall(ctx, "files.info", url.Values{"file": {fileID}}, &info)
	var resp slack.SlackErrorResponse
	if errors.As(err, &resp) && (resp.Err == "file_not_found" || resp.Err == "file_deleted") {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	for _, visibility := range []string{"public", "private"} {
		for _, s := range info.File.Shares[visibility][to.Chat] {
			if s.ThreadTS == to.Thread {
				return s.TS, true, nil
			}
			if ts == "" {
				ts = s.TS
			}
		}
	}
	return ts, true, nil
}

// rawCall is one Web API call slack-go does not read all of (files.info's
// shares), failing as slack-go's calls do, for classify.
func (a *Adapter) rawCall(ctx context.Context, method string, form url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.APIURL+method, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+a.cfg.BotToken)
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &slack.RateLimitedError{RetryAfter: time.Duration(wait) * time.Second}
	case resp.StatusCode != http.StatusOK:
		return slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	var ok struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEnvelope))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if err := json.Unmarshal(body, &ok); err != nil {
		return fmt.Errorf("%s: undecodable answer: %w", method, err)
	}
	if !ok.OK {
		return slack.SlackErrorResponse{Err: ok.Error}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: undecodable answer: %w", method, err)
	}
	return nil
}

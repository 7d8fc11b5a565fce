package signal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/styled"
)

// MaxFile is the largest attachment Signal carries, either way: 100 MB.
const MaxFile = 100 << 20

// display is how people know the service, in refusals.
const display = "Signal"

var (
	_ platform.DownloadLimiter = (*Adapter)(nil)
	_ platform.FileSender      = (*Adapter)(nil)
)

// MaxDownload is Signal's attachment limit, 100 MB.
func (a *Adapter) MaxDownload() int64 { return MaxFile }

// MaxUpload is Signal's attachment limit, 100 MB.
func (a *Adapter) MaxUpload() int64 { return MaxFile }

// wireAttachment is an attachment of a received message, as signal-cli
// describes it (its JsonAttachment).
type wireAttachment struct {
	ContentType string `json:"contentType"`
	Filename    string `json:"filename"`
	ID          string `json:"id"`
	Size        int64  `json:"size"`
}

// attachments are a message's files; each is read from the daemon
// (getAttachment) with the chat it came in as the daemon asks for it:
// params is {"recipient": sender} or {"groupId": id}.
func (a *Adapter) attachments(list []wireAttachment, params map[string]any) []platform.Attachment {
	var out []platform.Attachment
	for _, w := range list {
		if w.ID == "" {
			continue // not downloaded by the daemon: nothing to read
		}
		kind := platform.KindDocument
		switch mt := strings.ToLower(w.ContentType); {
		case strings.HasPrefix(mt, "image/"):
			kind = platform.KindPhoto
		case strings.HasPrefix(mt, "video/"):
			kind = platform.KindVideo
		case strings.HasPrefix(mt, "audio/") && w.Filename == "":
			// signal-cli does not pass on the voice-note flag; the apps
			// record voice notes without a file name.
			kind = platform.KindVoice
		case strings.HasPrefix(mt, "audio/"):
			kind = platform.KindAudio
		}
		label := w.Filename
		if label == "" {
			label = "the " + string(kind)
		}
		w, size := w, max(w.Size, 0)
		out = append(out, platform.Attachment{Kind: kind, Name: w.Filename, MediaType: w.ContentType, Size: size,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, w.ID, params, size, label) }})
	}
	return out
}

// download reads an attachment the daemon keeps through its
// getAttachment call, whose answer carries the bytes as one base64
// string: decoded as it streams in, never held whole.
func (a *Adapter) download(ctx context.Context, attID string, chat map[string]any, size int64, label string) (io.ReadCloser, error) {
	if err := platform.CheckDownload(display, label, size, MaxFile); err != nil {
		return nil, err
	}
	params := clone(chat)
	params["id"] = attID
	body, err := a.request("getAttachment", params)
	if err != nil {
		return nil, platform.Permanent(fmt.Errorf("signal: download %s: %w", label, err))
	}
	ctx, cancel := context.WithTimeout(ctx, a.transferTimeout(size))
	resp, err := a.post(ctx, "getAttachment", bytes.NewReader(body), int64(len(body)))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("signal: download %s: %w", label, err)
	}
	data, err := answerData(resp.Body)
	if err != nil {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("signal: download %s: %w", label, classifyAnswer("getAttachment", err))
	}
	dec := base64.NewDecoder(base64.StdEncoding, data)
	return platform.LimitDownload(&closer{Reader: dec, close: func() error { cancel(); return resp.Body.Close() }}, display, label, MaxFile), nil
}

// transferTimeout bounds a call carrying a file of size bytes: the
// request timeout and a second more for every MB.
func (a *Adapter) transferTimeout(size int64) time.Duration {
	return a.cfg.RequestTimeout + time.Duration(size>>20)*time.Second
}

type closer struct {
	io.Reader
	close func() error
}

func (c *closer) Close() error { return c.close() }

// errNoData says an answer had neither the data nor an error.
var errNoData = errors.New("the answer has no data")

// answerData finds result.data in a JSON-RPC answer and returns a
// reader of that string's contents, reading on from the answer as it
// comes. An error answer is returned as its *rpcError.
func answerData(body io.Reader) (io.Reader, error) {
	dec := json.NewDecoder(body)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not a JSON-RPC answer: %w", err)
		}
		switch key {
		case "error":
			var e rpcError
			if err := dec.Decode(&e); err != nil {
				return nil, fmt.Errorf("error answer: %w", err)
			}
			return nil, &e
		case "result":
			if err := expectDelim(dec, '{'); err != nil {
				return nil, errNoData
			}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("result: %w", err)
				}
				if k == "data" {
					// The decoder stops before the value: read the string
					// from its buffer and the body after it.
					return newStringReader(io.MultiReader(dec.Buffered(), body))
				}
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return nil, fmt.Errorf("result: %w", err)
				}
			}
			return nil, errNoData
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("not a JSON-RPC answer: %w", err)
			}
		}
	}
	return nil, errNoData
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not a JSON-RPC answer: %w", err)
	}
	if tok != d {
		return fmt.Errorf("not a JSON-RPC answer: %v where %v was expected", tok, d)
	}
	return nil
}

// stringReader reads a JSON string of base64 from just after its key
// (": \"…\"") up to its closing quote. Base64 needs no escapes; an
// escaped slash ("\/"), which some encoders write, is read as a slash.
type stringReader struct {
	r    *bufio.Reader
	done bool
}

func newStringReader(r io.Reader) (*stringReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for _, want := range []byte{':', '"'} {
		for {
			c, err := br.ReadByte()
			if err != nil {
				return nil, fmt.Errorf("result.data: %w", err)
			}
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				continue
			}
			if c != want {
				return nil, fmt.Errorf("result.data is not a string")
			}
			break
		}
	}
	return &stringReader{r: br}, nil
}

func (s *stringReader) Read(p []byte) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) {
		c, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the string was cut off
			}
			return n, err
		}
		switch c {
		case '"':
			s.done = true
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case '\\':
			if c, err = s.r.ReadByte(); err != nil || c != '/' {
				return n, errors.New("result.data: an escape base64 does not have")
			}
		}
		p[n] = c
		n++
	}
	return n, nil
}

// classifyAnswer classifies a failed answer as call does.
func classifyAnswer(method string, err error) error {
	var e *rpcError
	if errors.As(err, &e) {
		return classifyRPC(method, e)
	}
	return fmt.Errorf("%s: %w", method, err)
}

// dataMarker stands for the file's base64 in the encoded send request,
// where the bytes are streamed in.
const dataMarker = "baton-file-data"

// SendFile sends a file as an attachment (send with "attachments": a
// data URI, "data:<type>;filename=<name>;base64,<bytes>", as signal-cli
// takes it), with the caption as the message's text and styles. The
// file's bytes stream into the request, never held whole. Signal cannot
// drop a repeated send: a try after a lost answer sends the file again.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	params, err := a.target(to)
	if err != nil {
		return "", err
	}
	if err := platform.CheckUpload(display, f, MaxFile); err != nil {
		return "", err
	}
	if f.Open == nil {
		return "", platform.Permanent(fmt.Errorf("signal: send %s: no content", f.Name))
	}
	if caption := styled.Render(strings.TrimSpace(f.Caption), nil); strings.TrimSpace(caption.Plain) != "" {
		params["message"] = caption.Plain
		if styles := textStyles(caption); len(styles) > 0 {
			params["textStyle"] = styles
		}
	}
	params["attachments"] = []string{dataURIPrefix(f) + dataMarker}
	req, err := a.request("send", params)
	if err != nil {
		return "", platform.Permanent(fmt.Errorf("signal: send %s: %w", f.Name, err))
	}
	// The first marker is the file's: only the fixed fields (id,
	// jsonrpc, method) come before "attachments", the first parameter in
	// key order, ahead of any text a person wrote.
	head, tail, ok := bytes.Cut(req, []byte(dataMarker))
	if !ok {
		return "", platform.Permanent(fmt.Errorf("signal: send %s: the request has no place for the file", f.Name))
	}
	rc, err := f.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("signal: send %s: read the file: %w", f.Name, err)
	}
	pr, pw := io.Pipe()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		defer rc.Close()
		_, err := pw.Write(head)
		if err == nil {
			enc := base64.NewEncoder(base64.StdEncoding, pw)
			if _, err = io.Copy(enc, rc); err == nil {
				err = enc.Close()
			}
		}
		if err == nil {
			_, err = pw.Write(tail)
		}
		pw.CloseWithError(err)
	}()
	defer func() {
		pr.Close() // ends the writer if the request stopped reading
		<-wrote    // the file is closed when SendFile returns
	}()
	ctx, cancel := context.WithTimeout(ctx, a.transferTimeout(f.Size))
	defer cancel()
	length := int64(len(head)+len(tail)) + int64(base64.StdEncoding.EncodedLen(int(f.Size)))
	resp, err := a.post(ctx, "send", pr, length)
	if err != nil {
		return "", fmt.Errorf("signal: send %s: %w", f.Name, err)
	}
	defer resp.Body.Close()
	var res struct {
		Timestamp int64 `json:"timestamp"`
	}
	if err := readAnswer("send", resp.Body, &res); err != nil {
		return "", fmt.Errorf("signal: send %s: %w", f.Name, err)
	}
	return strconv.FormatInt(res.Timestamp, 10), nil
}

// dataURIPrefix is the data URI of f up to its base64: signal-cli reads
// the media type (which must have a slash, or the URI is taken for a
// file path) and a URL-encoded filename parameter.
func dataURIPrefix(f platform.File) string {
	mt, _, err := mime.ParseMediaType(f.MediaType)
	if err != nil || !strings.Contains(mt, "/") {
		mt = "application/octet-stream"
	}
	p := "data:" + mt
	if name := strings.TrimSpace(f.Name); name != "" {
		p += ";filename=" + url.QueryEscape(name)
	}
	return p + ";base64,"
}

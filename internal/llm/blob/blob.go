// Package blob streams the large payloads of a model request — images and
// documents, base64 in the JSON — into its body as it is sent. The request
// is marshaled with a short token in each payload's place, and the body
// writes each payload's base64 where its token stands: a 20 MB PDF costs
// its own bytes, never the several encoded copies a JSON encoder holds
// (the Anthropic SDK's held 290 MB at once for one).
package blob

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Set is the payloads of one request. Its zero value is not usable; use
// New.
type Set struct {
	prefix string // "batonblob<random>_": no request text holds it by chance
	data   [][]byte
}

// New returns an empty set.
func New() *Set {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return &Set{prefix: "batonblob" + hex.EncodeToString(nonce[:]) + "_"}
}

// Token registers data and returns the text that stands for its base64 in
// the marshaled request: JSON-safe, and safe inside a data URL.
func (s *Set) Token(data []byte) string {
	s.data = append(s.data, data)
	return s.prefix + strconv.Itoa(len(s.data)-1) + "_"
}

// Len is the number of payloads registered.
func (s *Set) Len() int { return len(s.data) }

// piece is a stretch of the body: marshaled text, or a payload.
type piece struct {
	text []byte
	data []byte // base64-encoded as it is read
	blob bool
}

// split cuts marshaled at each token.
func (s *Set) split(marshaled []byte) ([]piece, int64, error) {
	var out []piece
	var length int64
	rest := marshaled
	seen := 0
	for {
		i := bytes.Index(rest, []byte(s.prefix))
		if i < 0 {
			break
		}
		out = append(out, piece{text: rest[:i]})
		length += int64(i)
		rest = rest[i+len(s.prefix):]
		end := bytes.IndexByte(rest, '_')
		if end < 0 {
			return nil, 0, errors.New("blob: a token is cut short in the request")
		}
		n, err := strconv.Atoi(string(rest[:end]))
		if err != nil || n < 0 || n >= len(s.data) {
			return nil, 0, fmt.Errorf("blob: no payload for token %q", rest[:end])
		}
		out = append(out, piece{data: s.data[n], blob: true})
		length += int64(base64.StdEncoding.EncodedLen(len(s.data[n])))
		rest = rest[end+1:]
		seen++
	}
	if seen < len(s.data) {
		return nil, 0, fmt.Errorf("blob: %d of %d payloads are not in the request", len(s.data)-seen, len(s.data))
	}
	out = append(out, piece{text: rest})
	return out, length + int64(len(rest)), nil
}

// Swap replaces req's marshaled body (small: tokens in place of the
// payloads) with one that writes each payload's base64 where its token
// stands, as it is read. GetBody gives the same again, for a retry.
func (s *Set) Swap(req *http.Request) error {
	if len(s.data) == 0 || req.Body == nil {
		return nil
	}
	marshaled, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	pieces, length, err := s.split(marshaled)
	if err != nil {
		return err
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(&reader{pieces: pieces}), nil }
	req.Body, _ = open()
	req.GetBody = open
	req.ContentLength = length
	req.Header.Set("Content-Length", strconv.FormatInt(length, 10))
	return nil
}

// chunk is how much of a payload is encoded at a time: a multiple of 3,
// so only the last chunk is padded.
const chunk = 48 << 10

// reader reads pieces in order, encoding payloads chunk by chunk.
type reader struct {
	pieces []piece
	off    int    // into the current piece's text or data
	enc    []byte // the encoding buffer
	buf    []byte // of enc: encoded, not yet read
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if len(r.pieces) == 0 {
			return 0, io.EOF
		}
		pc := &r.pieces[0]
		if !pc.blob {
			if r.off < len(pc.text) {
				n := copy(p, pc.text[r.off:])
				r.off += n
				return n, nil
			}
			r.pieces, r.off = r.pieces[1:], 0
			continue
		}
		if r.off >= len(pc.data) {
			r.pieces, r.off = r.pieces[1:], 0
			continue
		}
		end := min(r.off+chunk, len(pc.data))
		if r.enc == nil {
			r.enc = make([]byte, base64.StdEncoding.EncodedLen(chunk))
		}
		r.buf = r.enc[:base64.StdEncoding.EncodedLen(end-r.off)]
		base64.StdEncoding.Encode(r.buf, pc.data[r.off:end])
		r.off = end
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// Client talks to the gateway whose socket is at Socket.
type Client struct {
	Socket string
	http   *http.Client
}

// NewClient is a client for the socket at path (see SocketPath).
func NewClient(path string) *Client {
	return &Client{
		Socket: path,
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
			DisableCompression: true,
		}},
	}
}

// Status asks the gateway what runs.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.do(ctx, http.MethodGet, "/v1/status", nil, &s)
	return s, err
}

// RequestHandoff asks the gateway to move a session; the handoff is
// pending when this returns, and Watch follows it.
func (c *Client) RequestHandoff(ctx context.Context, req HandoffRequest) (Handoff, error) {
	var h Handoff
	err := c.do(ctx, http.MethodPost, "/v1/handoffs", req, &h)
	return h, err
}

// Kick tells the gateway to look for pending handoffs now, for writers
// that put one in the store directly.
func (c *Client) Kick(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/kick", nil, nil)
}

// Watch calls fn with each progress step of handoff id until a terminal
// one, which it returns. If the gateway goes away first, the error wraps
// io.ErrUnexpectedEOF or ErrNoGateway: the handoff's fate is then in the
// store, not known here.
func (c *Client) Watch(ctx context.Context, id int64, fn func(Progress)) (Progress, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://gateway/v1/handoffs/"+strconv.FormatInt(id, 10)+"/events", nil)
	if err != nil {
		return Progress{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Progress{}, c.connErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Progress{}, decodeError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var p Progress
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return Progress{}, fmt.Errorf("watch handoff %d: bad progress line: %w", id, err)
		}
		if fn != nil {
			fn(p)
		}
		if p.Terminal() {
			return p, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return Progress{}, err
	}
	return Progress{}, fmt.Errorf("watch handoff %d: gateway went away: %w", id, io.ErrUnexpectedEOF)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://gateway"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return c.connErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return decodeError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("gateway %s %s: bad answer: %w", method, path, err)
	}
	return nil
}

// connErr turns "no socket" and "nobody listening" into ErrNoGateway.
func (c *Client) connErr(err error) error {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w (no answer on %s)", ErrNoGateway, c.Socket)
	}
	return fmt.Errorf("%w (%s): %w", ErrLostGateway, c.Socket, err)
}

func decodeError(resp *http.Response) error {
	var e APIError
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e) != nil || e.Message == "" {
		return fmt.Errorf("gateway answered HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return &e
}

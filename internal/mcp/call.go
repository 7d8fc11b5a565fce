package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/plural"
)

// call runs one tool of the server with the model's arguments. A call
// the server's death cut off says so (it may or may not have acted); a
// slow one ends at the server's timeout; ctx (Ctrl-C, /stop) ends it too,
// and the server is told to cancel it.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	c, err := s.ensure(ctx)
	if err != nil {
		return "", err
	}
	timeout := s.cfg.CallTimeout()
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.session.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("%s.%s ran past %s and was stopped (mcp.servers.%s.timeout sets how long a call may run)", s.name, tool, timeout, s.name)
	case c.proc != nil && c.ended(err):
		s.drop(c, err)
		go c.close() // reap what is left of it
		return "", c.explain(fmt.Errorf("interrupted: MCP server %s stopped during the call, so it may or may not have acted; it is started again for the next call", s.name))
	case !isWireError(err):
		// Not the server's answer: the connection failed (a URL server
		// went away). The next call connects again.
		s.drop(c, err)
		go c.close()
		return "", fmt.Errorf("interrupted: lost MCP server %s during the call (%v), so it may or may not have acted; it is connected again for the next call", s.name, err)
	default:
		return "", fmt.Errorf("MCP server %s: %w", s.name, err)
	}
	out := s.result(ctx, tool, res)
	if res.IsError {
		return "", errors.New(out)
	}
	return out, nil
}

// isWireError reports whether err is the server's own JSON-RPC error
// answer (an unknown tool, bad arguments), after which the session goes
// on. The SDK words its own transport failures as JSON-RPC errors too,
// with codes of its own: those are not the server's answer.
func isWireError(err error) bool {
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		return false
	}
	switch wire.Code {
	case -32003, -32004, -32005: // client closing, server closing, rejected by the transport
		return false
	}
	return true
}

// ended reports whether the session is over: the process died or the
// connection dropped while the call waited.
func (c *conn) ended(err error) bool {
	select {
	case <-c.done:
		return true
	default:
	}
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// result is what the model reads of a tool's result: its text, and a
// line for each picture, sound or file, which is kept with the call's
// result (agent.OutputFile) so that the model receives it and it travels
// with the conversation.
func (s *server) result(ctx context.Context, tool string, res *sdk.CallToolResult) string {
	var out []string
	n := 0
	keep := func(data []byte, mediaType, name string) {
		n++
		if name == "" {
			name = fmt.Sprintf("%s-%s-%d%s", s.name, tool, n, extension(mediaType))
		}
		line := fmt.Sprintf("[%s: %s, %s", name, mediaType, plural.Size(int64(len(data))))
		if s.opts.Files == nil {
			out = append(out, line+"; not kept: no store keeps files here]")
			return
		}
		att, err := s.opts.Files.PutFile(ctx, bytes.NewReader(data), name)
		if err != nil {
			out = append(out, line+"; not kept: "+err.Error()+"]")
			return
		}
		att.Name = name
		if !agent.OutputFile(ctx, att) {
			out = append(out, line+"; not kept: not in a conversation turn]")
			return
		}
		out = append(out, line+"; attached]")
	}
	for _, content := range res.Content {
		switch c := content.(type) {
		case *sdk.TextContent:
			out = append(out, c.Text)
		case *sdk.ImageContent:
			keep(c.Data, c.MIMEType, "")
		case *sdk.AudioContent:
			keep(c.Data, c.MIMEType, "")
		case *sdk.ResourceLink:
			line := "[resource " + c.URI
			if c.Name != "" {
				line += " (" + c.Name + ")"
			}
			if c.Description != "" {
				line += ": " + c.Description
			}
			out = append(out, line+"]")
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Blob != nil:
				keep(r.Blob, r.MIMEType, baseName(r.URI))
			default:
				out = append(out, "[resource "+r.URI+"]\n"+r.Text)
			}
		default:
			raw, _ := json.Marshal(content)
			out = append(out, string(raw))
		}
	}
	if len(out) == 0 && res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		out = append(out, string(raw))
	}
	return strings.Join(out, "\n")
}

// extension is a file extension for a media type, or "".
func extension(mediaType string) string {
	switch mediaType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	}
	if exts, _ := mime.ExtensionsByType(mediaType); len(exts) > 0 {
		return exts[0]
	}
	return ""
}

// baseName is the last part of a resource's URI, as a file's name.
func baseName(uri string) string {
	i := strings.LastIndexAny(uri, "/:")
	name := uri[i+1:]
	if name == "" || len(name) > 100 {
		return ""
	}
	return name
}

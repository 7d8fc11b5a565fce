// Package mcptest is a real MCP server, built on the SDK's server side,
// for tests: over stdio in a process of its own (a test binary that
// serves when EnvServe is set), or over streamable HTTP on loopback.
package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvServe, set in a test binary's environment, has Serving report true:
// its TestMain then serves the demo server over stdio instead of testing.
const EnvServe = "BATON_MCPTEST_SERVE"

// Serving reports whether this process was started to be the server.
func Serving() bool { return os.Getenv(EnvServe) != "" }

// ServeStdio serves the demo server on standard input and output until
// the client closes it, and returns the process's exit code.
func ServeStdio() int {
	if err := NewServer(nil).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		return 1
	}
	return 0
}

// Command is how a client starts this test binary as the server: the
// program and the environment it needs (besides PATH and the like).
func Command() (program string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, map[string]string{EnvServe: "stdio"}
}

// HTTP is the demo server over streamable HTTP.
type HTTP struct {
	*httptest.Server
	Calls *Calls
}

// ServeHTTP starts the demo server over streamable HTTP on 127.0.0.1; it
// is closed when the test ends.
func ServeHTTP(t testing.TB) *HTTP {
	calls := &Calls{}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return NewServer(calls) }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &HTTP{Server: srv, Calls: calls}
}

// Calls counts the calls each tool has begun.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *Calls) begin(tool string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[tool]++
}

// Begun is how many calls of tool have begun.
func (c *Calls) Begun(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[tool]
}

// Picture is the PNG the picture tool returns: 3×2 pixels.
func Picture() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for x := range 3 {
		for y := range 2 {
			img.Set(x, y, color.RGBA{R: uint8(80 * x), G: uint8(120 * y), B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to say back"`
}

type addArgs struct {
	Numbers struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	} `json:"numbers" jsonschema:"the two numbers"`
	Options struct {
		Label string `json:"label,omitempty"`
	} `json:"options" jsonschema:"how to say the sum"`
}

type slowArgs struct {
	Seconds float64 `json:"seconds"`
}

type envArgs struct {
	Name string `json:"name"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// NewServer is the demo server and its tools:
//   - echo {text}: says text back;
//   - add {numbers: {a, b}, options: {label}}: a schema with nested objects;
//   - picture: a PNG (Picture) and a line;
//   - slow {seconds}: waits, or until the call is cancelled;
//   - crash: the process exits in the middle of the call;
//   - fail: a result marked as an error;
//   - env {name}: a variable of the server's environment;
//   - grow: adds a tool, grown (the server tells its clients the list changed);
//   - cwd: the server's working directory;
//   - pid: the server process's id (a restart changes it);
//   - look {text}: marked read-only (readOnlyHint).
//
// calls, if not nil, counts the calls begun.
func NewServer(calls *Calls) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok {
				calls.begin(p.Name)
			}
			return next(ctx, method, req)
		}
	})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Say the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return text("echo: " + a.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *sdk.CallToolRequest, a addArgs) (*sdk.CallToolResult, any, error) {
			sum := strconv.FormatFloat(a.Numbers.A+a.Numbers.B, 'f', -1, 64)
			if a.Options.Label != "" {
				sum = a.Options.Label + " " + sum
			}
			return text(sum), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "picture", Description: "Take a picture."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a picture of the test pattern"},
				&sdk.ImageContent{Data: Picture(), MIMEType: "image/png"},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Wait."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a slowArgs) (*sdk.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(a.Seconds * float64(time.Second))):
				return text("waited"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Stop the server in the middle of the call."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			if !Serving() {
				return nil, nil, fmt.Errorf("crash only stops a server process of its own")
			}
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fail."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Read the server's environment."},
		func(_ context.Context, _ *sdk.CallToolRequest, a envArgs) (*sdk.CallToolResult, any, error) {
			v, ok := os.LookupEnv(a.Name)
			if !ok {
				return text(a.Name + " is not set"), nil, nil
			}
			return text(a.Name + "=" + v), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "cwd", Description: "The server's working directory."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			dir, err := os.Getwd()
			return text(dir), nil, err
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Add a tool, grown, to the server's list."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			sdk.AddTool(s, &sdk.Tool{Name: "grown", Description: "A tool added while the server ran."},
				func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
					return text("grown"), nil, nil
				})
			return text("grew"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "look", Description: "Look without changing anything.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return text("looked at " + strings.ToUpper(a.Text)), nil, nil
		})
	return s
}

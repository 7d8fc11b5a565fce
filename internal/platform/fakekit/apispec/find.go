// Package apispec reads the chat services' own published descriptions of
// their APIs (Telegram's Bot API as JSON, Discord's OpenAPI, Slack's Web
// API OpenAPI and Events API schemas), so the fakes in
// internal/platform/*/*test refuse what the real services refuse. The
// descriptions are not part of baton: they live beside the repository, in
// ../shared/specs from the module root, and are only read by tests.
//
// Where they are absent (a clone on its own), Path reports so and the
// fakes check nothing; Require skips a test that cannot do without them,
// except under CI=true, where they must be there and their absence fails.
package apispec

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Files of ../shared/specs.
const (
	Telegram     = "telegram-bot-api.json"
	Discord      = "discord-openapi.json"
	Slack        = "slack-web-openapi-v2.json"
	SlackEvents  = "slack-events-api-async-v1.json"
	SlackWrapper = "slack-event-wrapper-schema.json"
)

// ErrNoModule is returned when no go.mod is found above the working
// directory.
var ErrNoModule = errors.New("apispec: no go.mod above the working directory")

// Dir is the directory the descriptions are looked for in: shared/specs
// beside the module root (the nearest directory above the working one
// holding go.mod).
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("apispec: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "specs"), nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoModule
		}
	}
}

// Path is where the description named file is; ok is false when it is
// not there.
func Path(file string) (path string, ok bool) {
	dir, err := Dir()
	if err != nil {
		return "", false
	}
	p := filepath.Join(dir, file)
	if _, err := os.Stat(p); err != nil {
		return p, false
	}
	return p, true
}

// Require is the description named file's path; a test that needs it is
// skipped when it is absent, or fails when CI=true (CI has ../shared).
func Require(tb testing.TB, file string) string {
	tb.Helper()
	p, ok := Path(file)
	if ok {
		return p
	}
	msg := fmt.Sprintf("the service's published API description %s is not at %s: "+
		"it lives beside the repository (../shared/specs from the module root), not in it", file, p)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + "; under CI=true it must be there")
	}
	tb.Skip(msg + "; skipped")
	return ""
}

// Body reads r's body and leaves it readable again.
func Body(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, err
}

// Calls reads the Go files of the package in dir (tests left out) and
// returns what name says of each call in them, sorted and once each: the
// methods or routes an adapter calls, found in its source, for a test
// that holds each against the service's description.
func Calls(tb testing.TB, dir string, name func(call *ast.CallExpr) (string, bool)) []string {
	tb.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		tb.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if s, ok := name(call); ok {
					seen[s] = true
				}
			}
			return true
		})
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// StringArg is call's argument i when it is a string literal.
func StringArg(call *ast.CallExpr, i int) (string, bool) {
	if i >= len(call.Args) {
		return "", false
	}
	lit, ok := call.Args[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// Selector is call's function as "x.y.Name" when it is a chain of
// selectors on an identifier ("a.api.SendMessage", "rest.GetChannel.Compile").
func Selector(call *ast.CallExpr) string {
	var parts []string
	e := call.Fun
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			parts = append([]string{x.Sel.Name}, parts...)
			e = x.X
			continue
		case *ast.Ident:
			parts = append([]string{x.Name}, parts...)
		default:
			return ""
		}
		return strings.Join(parts, ".")
	}
}

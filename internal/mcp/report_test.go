package mcp_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/testutil"
)

// /tools names baton's own tools and each server, running with its
// tools or failed with why; with no server, it says where to add one.
func TestReport(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, 30*time.Second)
	if got := mcp.Report(ctx, reg); !strings.Contains(got, "baton's own tools: shell, read_file") || !strings.Contains(got, "No MCP servers are configured: name them under mcp.servers") {
		t.Errorf("without servers:\n%s", got)
	}
	reg.AddSource(open(t, map[string]config.MCPServer{"demo": stdio(nil), "gone": {Command: filepath.Join(t.TempDir(), "gone-server")}}, mcp.Options{}))
	got := mcp.Report(ctx, reg)
	for _, want := range []string{
		"• demo — running (command: ",
		"demo.add, demo.crash, demo.cwd, demo.echo",
		"• gone — failed (command: ",
		`gone-server" not found: is it installed, and on PATH?; tried again from `,
		`unless tools.allow names them ("mcp:server.*")`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	var _ agent.ToolSource = (*mcp.Servers)(nil)
}

package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/agent"
)

// Report is what /tools and baton doctor say: baton's own tools, then
// every MCP server, its state and its tools. Servers not running are
// started (as a turn would start them) so that their tools can be named.
func Report(ctx context.Context, reg *agent.Registry) string {
	if reg == nil {
		return "No tools: this agent has none."
	}
	reg.List(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "baton's own tools: %s\n", strings.Join(reg.Own(), ", "))
	var servers []Status
	for _, src := range reg.Sources() {
		if s, ok := src.(*Servers); ok {
			servers = append(servers, s.Status()...)
		}
	}
	if len(servers) == 0 {
		b.WriteString("No MCP servers are configured: name them under mcp.servers in config.yaml (README.md, \"Tools from MCP servers\").")
		return b.String()
	}
	b.WriteString("MCP servers (mcp.servers in config.yaml); their tools ask before they run unless tools.allow names them (\"mcp:server.*\"):")
	for _, st := range servers {
		b.WriteString("\n" + StatusLine(st))
	}
	return b.String()
}

// StatusLine is one server's state in a line.
func StatusLine(st Status) string {
	line := fmt.Sprintf("• %s — %s", st.Name, st.State)
	switch st.State {
	case Running:
		line += fmt.Sprintf(" (%s): %s", st.Where, strings.Join(st.Tools, ", "))
		if len(st.Tools) == 0 {
			line += "no tools"
		}
	case Failed:
		line += fmt.Sprintf(" (%s): %v", st.Where, st.Err)
		if !st.Retry.IsZero() && time.Now().Before(st.Retry) {
			line += "; tried again from " + st.Retry.Format(time.TimeOnly)
		}
	default:
		line += " (" + st.Where + ")"
	}
	return line
}

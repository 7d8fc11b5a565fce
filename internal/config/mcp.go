package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"time"
)

// MCPConfig names the Model Context Protocol servers whose tools the
// agent may call, each under a short name of its own.
type MCPConfig struct {
	Servers map[string]MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server: a command baton starts and speaks to over
// its standard input and output, or a URL speaking streamable HTTP.
// Values in Env and Headers may name environment variables as ${NAME}
// (from the shell or BATON_HOME/.env), so tokens stay out of config.yaml.
type MCPServer struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Cwd     string            `yaml:"cwd"`

	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`

	// TrustReadOnly lets the tools this server marks read-only (its
	// readOnlyHint annotation) run without asking. Off, every tool of the
	// server asks unless tools.allow names it: the hint is the server's
	// word, not baton's.
	TrustReadOnly bool `yaml:"trust_read_only"`
	// Timeout bounds one call; 0: DefaultMCPTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultMCPTimeout bounds an MCP tool call when its server sets none.
const DefaultMCPTimeout = 2 * time.Minute

// mcpNameOK reports whether a server may be called name: its tools are
// "name.tool", and allow rules "mcp:name.tool", so the name holds no dot
// (letters, digits, '-' and '_', at most 32).
func mcpNameOK(name string) bool {
	if name == "" || len(name) > 32 {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Check refuses a server that cannot be started as written, naming it.
func (c MCPConfig) Check() error {
	var errs []error
	for _, name := range c.Names() {
		s := c.Servers[name]
		where := "mcp.servers." + name
		switch {
		case !mcpNameOK(name):
			errs = append(errs, fmt.Errorf("%s: a server's name is letters, digits, '-' and '_' (at most 32): its tools are called %q", where, name+".tool"))
		case s.Command == "" && s.URL == "":
			errs = append(errs, fmt.Errorf("%s: give command (a server baton starts) or url (one already running)", where))
		case s.Command != "" && s.URL != "":
			errs = append(errs, fmt.Errorf("%s: give command or url, not both", where))
		case s.URL != "":
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s: url %q is not an http(s) URL", where, s.URL))
			}
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
				errs = append(errs, fmt.Errorf("%s: args, env and cwd are for a command; a url server takes headers", where))
			}
		case len(s.Headers) > 0:
			errs = append(errs, fmt.Errorf("%s: headers are for a url server; a command takes env", where))
		}
		if s.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s: timeout must not be negative", where))
		}
	}
	return errors.Join(errs...)
}

// Names are the servers' names, sorted.
func (c MCPConfig) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Expand replaces ${NAME} in a value of Env or Headers by the variable's
// value, from lookup; a variable that is not set is an error, not an
// empty token.
func Expand(value string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := os.Expand(value, func(name string) string {
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("${%s} is not set (set it in the environment or BATON_HOME/.env)", missing[0])
	}
	return out, nil
}

// CallTimeout is how long one call may run.
func (s MCPServer) CallTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultMCPTimeout
}

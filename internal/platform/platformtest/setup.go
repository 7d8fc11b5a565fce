package platformtest

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/platform"
)

// Setup is what the gateway hands platform name's Spec.Open when
// config.yaml's name: section is the YAML given ("" for no section) and
// the environment holds env: the section is decoded as config.yaml's is
// (unknown fields refused). A test sets the other fields it needs (Home,
// Log, Owners…) on the result.
func Setup(tb testing.TB, name, section string, env map[string]string) platform.Setup {
	tb.Helper()
	var cfg config.Config
	if section != "" {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(section), &doc); err != nil || len(doc.Content) != 1 {
			tb.Fatalf("platformtest: the %s section is not YAML (%v): %q", name, err, section)
		}
		cfg.Platforms = map[string]yaml.Node{name: *doc.Content[0]}
	}
	decode, present := cfg.Section(name)
	return platform.Setup{
		Decode:  decode,
		Present: present,
		Env:     func(k string) string { return env[k] },
	}
}

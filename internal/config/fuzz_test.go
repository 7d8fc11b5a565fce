package config

import (
	"os"
	"path/filepath"
	"testing"
)

// Any config.yaml loads or is refused with an error naming the file; it
// never panics.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{"", "model:\n  provider: openai\n", "tools:\n  allow: [\"shell:git status\"]\n  paths: [~/x]\n",
		"gateway:\n  homes:\n    telegram: \"telegram:dm:1\"\n", "web:\n  listen: 0.0.0.0:1\n", "model: [", "\x00", "a: &a [*a]\n",
		"tools:\n  shell_timeout: forever\n", "model:\n  provider: nope\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, yaml string) {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, FileName), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(home); err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
	})
}

// Package config finds baton's home directory and reads its configuration
// from $BATON_HOME/config.yaml and the environment.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// HomeEnv names the environment variable that moves baton's home.
const HomeEnv = "BATON_HOME"

// ErrHomeNotDir is Home's error when the home path is a file.
var ErrHomeNotDir = errors.New("is a file, not a directory")

// Home is baton's state directory: $BATON_HOME, or ~/.baton. It need not
// exist yet; a file in its place is an error naming it.
func Home() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", HomeEnv, h, err)
		}
		return abs, checkHomeDir(abs, HomeEnv+"="+h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory (set %s to choose one): %w", HomeEnv, err)
	}
	h := filepath.Join(u, ".baton")
	return h, checkHomeDir(h, h)
}

// checkHomeDir refuses a home that exists as something else than a
// directory, before anything tries to read or create files in it.
func checkHomeDir(dir, named string) error {
	fi, err := os.Stat(dir)
	if err != nil || fi.IsDir() {
		return nil // missing: created when first needed
	}
	return fmt.Errorf("baton's home %s %w: set %s to a directory (baton creates it if missing)", named, ErrHomeNotDir, HomeEnv)
}

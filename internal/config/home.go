// Package config finds baton's home directory and reads its configuration
// from $BATON_HOME/config.yaml and the environment.
package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// HomeEnv names the environment variable that moves baton's home.
const HomeEnv = "BATON_HOME"

// Home is baton's state directory: $BATON_HOME, or ~/.baton.
func Home() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory (set %s to choose one): %w", HomeEnv, err)
	}
	return filepath.Join(u, ".baton"), nil
}

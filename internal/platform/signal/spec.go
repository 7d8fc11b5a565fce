package signal

import (
	"context"

	"github.com/baton-agent/baton/internal/platform"
)

// Environment variables Spec reads when the config section leaves a field
// empty.
const (
	EnvURL     = "SIGNAL_CLI_URL"
	EnvAccount = "SIGNAL_ACCOUNT"
)

// Section is the signal: section of config.yaml.
type Section struct {
	// URL is the signal-cli daemon's HTTP address; SIGNAL_CLI_URL if
	// empty, else http://127.0.0.1:8080.
	URL string `yaml:"url"`
	// Account is the number signal-cli runs as; SIGNAL_ACCOUNT if empty.
	Account string `yaml:"account"`
}

// Spec registers Signal: enabled when an account is set, in the signal:
// section or in SIGNAL_ACCOUNT (the section wins).
func Spec() platform.Spec {
	// Personal: signal-cli is linked to the owner's own number.
	return platform.Spec{Name: Name, Display: "Signal", Personal: true, Open: open, HomeForm: "signal:dm:+4915550000 (Note to Self: your own number)"}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	sec.URL = s.SectionOrEnv(sec.URL, EnvURL)
	sec.Account = s.SectionOrEnv(sec.Account, EnvAccount)
	if sec.Account == "" {
		return nil, platform.ErrNotConfigured
	}
	return New(Config{URL: sec.URL, Account: sec.Account, Logger: s.Log})
}

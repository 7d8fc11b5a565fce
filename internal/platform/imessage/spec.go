package imessage

import (
	"context"
	"time"

	"github.com/baton-agent/baton/internal/platform"
)

// Environment variables Spec reads when the config section leaves a field
// empty.
const (
	EnvURL      = "BLUEBUBBLES_URL"
	EnvPassword = "BLUEBUBBLES_PASSWORD"
)

// Section is the imessage: section of config.yaml.
type Section struct {
	// URL is the BlueBubbles server; BLUEBUBBLES_URL if empty.
	URL string `yaml:"url"`
	// Password is the server password; BLUEBUBBLES_PASSWORD if empty.
	Password string `yaml:"password"`
	// Listen is where baton takes webhooks; default 127.0.0.1:8091.
	Listen string `yaml:"listen"`
	// WebhookSecret is the ?secret= the webhook URL carries; default the
	// server password.
	WebhookSecret string `yaml:"webhook_secret"`
	// PrivateAPI: the server has the Private API on (typing).
	PrivateAPI bool `yaml:"private_api"`
	// CheckEvery is how often the server is checked and missed messages
	// fetched; default 30s.
	CheckEvery time.Duration `yaml:"check_every"`
}

// Spec registers iMessage: enabled when a BlueBubbles URL and password
// are set, in the imessage: section or the environment (the section wins).
func Spec() platform.Spec {
	// Personal: BlueBubbles speaks for the owner's own Apple ID.
	return platform.Spec{Name: Name, Display: "iMessage", Personal: true, Open: open, CheckAddress: checkAddress, HomeForm: homeForm}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	sec.URL = s.SectionOrEnv(sec.URL, EnvURL)
	sec.Password = s.SectionOrEnv(sec.Password, EnvPassword)
	if sec.URL == "" && sec.Password == "" && !s.Present {
		return nil, platform.ErrNotConfigured
	}
	if sec.Listen == "" {
		sec.Listen = "127.0.0.1:8091"
	}
	a, err := New(Config{URL: sec.URL, Password: sec.Password, Listen: sec.Listen, WebhookSecret: sec.WebhookSecret,
		PrivateAPI: sec.PrivateAPI, CheckEvery: sec.CheckEvery, Logger: s.Log, Memory: s.Memory})
	if err != nil {
		return nil, err
	}
	if s.Log != nil {
		s.Log.Info("imessage: give BlueBubbles this webhook (Settings → API & Webhooks, event new-message)",
			"url", "http://"+a.addr+WebhookPath+"?secret=…")
	}
	return a, nil
}

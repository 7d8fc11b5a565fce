package discord

import (
	"context"

	"github.com/baton-agent/baton/internal/platform"
)

// Section is the discord: section of config.yaml.
type Section struct {
	// Token is the bot token from the developer portal; DISCORD_BOT_TOKEN
	// if empty.
	Token string `yaml:"token"`
	// APIURL points at another REST API base (a proxy); default Discord's.
	APIURL string `yaml:"api_url"`
	// GatewayURL points at another gateway; default the one Discord names.
	GatewayURL string `yaml:"gateway_url"`
	// CDNURL points at another CDN (where attachments are read from);
	// default Discord's.
	CDNURL string `yaml:"cdn_url"`
}

// Spec registers Discord: enabled when a bot token is set, in the
// discord: section or in DISCORD_BOT_TOKEN (the section wins).
func Spec() platform.Spec {
	return platform.Spec{Name: Name, Display: "Discord", Open: open, CheckAddress: checkAddress, HomeForm: homeForm}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	tok := s.SectionOrEnv(sec.Token, EnvToken)
	if tok == "" {
		return nil, platform.ErrNotConfigured
	}
	return New(Config{Token: tok, APIURL: sec.APIURL, GatewayURL: sec.GatewayURL, CDNURL: sec.CDNURL, Logger: s.Log, Memory: s.Memory})
}

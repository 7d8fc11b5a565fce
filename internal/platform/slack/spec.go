package slack

import (
	"context"

	"github.com/baton-agent/baton/internal/platform"
)

// Section is the slack: section of config.yaml.
type Section struct {
	// BotToken is the bot user OAuth token (xoxb-…); SLACK_BOT_TOKEN if empty.
	BotToken string `yaml:"bot_token"`
	// AppToken is the app-level token (xapp-…, connections:write) Socket
	// Mode connects with; SLACK_APP_TOKEN if empty.
	AppToken string `yaml:"app_token"`
	// APIURL points at another Web API base (ending in /api/); default Slack's.
	APIURL string `yaml:"api_url"`
	// FilesURL points at another file host (where files are downloaded
	// from, with the bot token); default Slack's.
	FilesURL string `yaml:"files_url"`
}

// Spec registers Slack: enabled when a bot token is set, in the slack:
// section or in SLACK_BOT_TOKEN (the section wins); the app token is then
// required as well.
func Spec() platform.Spec {
	return platform.Spec{Name: Name, Display: "Slack", Shared: true, Open: open, CheckAddress: checkAddress, HomeForm: homeForm}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	bot, app := s.SectionOrEnv(sec.BotToken, EnvBotToken), s.SectionOrEnv(sec.AppToken, EnvAppToken)
	if bot == "" && (app == "" || !s.Present) {
		return nil, platform.ErrNotConfigured
	}
	return New(Config{BotToken: bot, AppToken: app, APIURL: sec.APIURL, FilesURL: sec.FilesURL, Logger: s.Log, Memory: s.Memory})
}

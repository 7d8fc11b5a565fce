package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// GatewayConfig governs `baton gateway`.
type GatewayConfig struct {
	// Owners lists, per platform, the platform user ids that belong to the
	// owner, e.g. telegram: ["12345"]. Messages from anyone else are
	// ignored and logged. The web chat needs none: its token is the key.
	Owners map[string][]string `yaml:"owners"`
	// Homes sets, per platform, the address key where handoffs land when
	// no /sethome was typed there, e.g. telegram: "telegram:dm:12345".
	Homes map[string]string `yaml:"homes"`
	// ShutdownGrace is how long a stopping gateway lets running turns
	// finish before it cancels them (they keep what was said).
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// HandoffLease is how long a claimed handoff is held without renewal
	// before another gateway may take it back.
	HandoffLease time.Duration `yaml:"handoff_lease"`
}

// WebConfig governs the built-in web chat.
type WebConfig struct {
	// Enabled is true unless set to false.
	Enabled *bool `yaml:"enabled"`
	// Listen is the address to serve on; it must be a loopback address
	// unless AllowRemote is set. Default 127.0.0.1:7878.
	Listen      string `yaml:"listen"`
	AllowRemote bool   `yaml:"allow_remote"`
}

// DefaultWebListen is where the web chat listens unless told otherwise.
const DefaultWebListen = "127.0.0.1:7878"

// On reports whether the web chat is enabled (the default).
func (w WebConfig) On() bool { return w.Enabled == nil || *w.Enabled }

// Addr is the listen address with the default filled in.
func (w WebConfig) Addr() string {
	if w.Listen == "" {
		return DefaultWebListen
	}
	return w.Listen
}

// TelegramConfig governs the Telegram bot.
type TelegramConfig struct {
	// Token is the bot token from @BotFather; TELEGRAM_BOT_TOKEN if empty.
	Token string `yaml:"token"`
	// ServerURL points at a self-hosted Bot API server; default Telegram's.
	ServerURL string `yaml:"server_url"`
}

// TelegramToken is the configured bot token, or TELEGRAM_BOT_TOKEN.
func (c Config) TelegramToken(env Env) string {
	if env == nil {
		env = os.Getenv
	}
	if c.Telegram.Token != "" {
		return c.Telegram.Token
	}
	return env("TELEGRAM_BOT_TOKEN")
}

// WithDefaults fills the gateway's durations.
func (g GatewayConfig) WithDefaults() GatewayConfig {
	if g.ShutdownGrace <= 0 {
		g.ShutdownGrace = 10 * time.Second
	}
	if g.HandoffLease <= 0 {
		g.HandoffLease = 30 * time.Second
	}
	return g
}

func (c Config) checkPlatforms() error {
	var errs []error
	if c.Web.On() {
		host, _, err := net.SplitHostPort(c.Web.Addr())
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("web.listen %q: want host:port, e.g. %s", c.Web.Listen, DefaultWebListen))
		case !c.Web.AllowRemote && !isLoopback(host):
			errs = append(errs, fmt.Errorf("web.listen %q is not a loopback address; set web.allow_remote: true if you mean it", c.Web.Listen))
		}
	}
	for platform, key := range c.Gateway.Homes {
		if !strings.HasPrefix(key, platform+":") {
			errs = append(errs, fmt.Errorf("gateway.homes.%s %q: an address key starts with the platform, e.g. %s:dm:12345", platform, key, platform))
		}
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

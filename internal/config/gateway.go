package config

import (
	"errors"
	"fmt"
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
	// ContinueOffer is how recently another of the owner's sessions must
	// have been active for a chat that holds none to offer it (/continue);
	// 0: 12h, negative: never offer.
	ContinueOffer time.Duration `yaml:"continue_offer"`
	// PollEvery is how often the gateway, and a terminal waiting on one,
	// read the store for work nothing woke them for: a handoff or a
	// notice written by a process that could not reach them. A store on a
	// Postgres server wakes them at once; 0: 2s.
	PollEvery time.Duration `yaml:"poll_every"`
	// Rate bounds how fast one person's messages are taken, per gateway:
	// burst at once, then one every every; zero: 20 at once, then one
	// every 2s.
	Rate RateConfig `yaml:"rate"`
}

// RateConfig is gateway.rate.
type RateConfig struct {
	Burst int           `yaml:"burst"`
	Every time.Duration `yaml:"every"`
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

func (c Config) checkHomes() error {
	var errs []error
	for platform, key := range c.Gateway.Homes {
		if !strings.HasPrefix(key, platform+":") {
			// The platform's own form (which kinds it has, how its ids
			// look) is checked where the platforms are known, at start.
			errs = append(errs, fmt.Errorf("gateway.homes.%s %q: an address key starts with the platform and the kind of chat, e.g. %s:dm:%s or %s:group:%s", platform, key, platform, key, platform, key))
		}
	}
	return errors.Join(errs...)
}

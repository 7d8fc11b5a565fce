package whatsapp

import (
	"context"
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// Section is the whatsapp: section of config.yaml.
type Section struct {
	// Enabled turns the adapter on; the device itself is linked with
	// `baton whatsapp link`.
	Enabled bool `yaml:"enabled"`
	// Home is a chat JID besides the owner's chat with themselves whose
	// messages are baton's (a group made for it, "120363…@g.us").
	Home string `yaml:"home"`
}

// Spec registers WhatsApp: enabled by `enabled: true` in the whatsapp:
// section once a device is linked.
func Spec() platform.Spec {
	// Personal: the device is linked to the owner's own account.
	return platform.Spec{Name: Name, Display: "WhatsApp", Personal: true, Open: open}
}

func open(ctx context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if s.Decode != nil {
		if err := s.Decode(&sec); err != nil {
			return nil, err
		}
	}
	if !sec.Enabled {
		return nil, platform.ErrNotConfigured
	}
	if sec.Home = strings.TrimSpace(sec.Home); sec.Home != "" && !strings.Contains(sec.Home, "@") {
		return nil, fmt.Errorf("whatsapp: home %q is not a chat JID (like 120363…@g.us)", sec.Home)
	}
	if s.Home == "" {
		return nil, fmt.Errorf("whatsapp: no BATON_HOME to keep the device in")
	}
	dev, err := OpenDevice(ctx, StorePath(s.Home), s.Log)
	if err != nil {
		return nil, err
	}
	if !dev.Linked() {
		dev.Close()
		err := fmt.Errorf("%w: whatsapp is enabled but no device is linked: %s", platform.ErrNotConfigured, LinkHint)
		if s.Log != nil {
			s.Log.Warn(err.Error())
		}
		return nil, err
	}
	return New(Config{Client: NewWhatsmeow(dev, s.Log), Home: sec.Home, Logger: s.Log})
}

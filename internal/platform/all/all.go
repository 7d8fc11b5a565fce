// Package all lists every chat platform baton is built with: one line per
// platform. The daemon builds adapters from this list, and the
// configuration accepts a top-level section for each name in it.
package all

import (
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/imessage"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

// Specs are the platforms, in the order the gateway starts them.
func Specs() []platform.Spec {
	return []platform.Spec{
		web.Spec(),
		telegram.Spec(),
		slack.Spec(),
		discord.Spec(),
		signal.Spec(),
		imessage.Spec(),
		matrix.Spec(),
		whatsapp.Spec(),
	}
}

// Names are the platforms' names (their config sections).
func Names() []string {
	specs := Specs()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

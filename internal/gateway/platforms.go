package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Platform names that are places but not adapters.
const (
	// TerminalPlatform is the terminal: handoffs to it wait in the store
	// until `baton` (or `baton resume`) picks them up.
	TerminalPlatform = "cli"
)

// platforms is what the gateway knows of the chat services it runs: their
// adapters, what each one's supervisor last said, the optional
// capabilities each refused where, their home chats, and their names for
// people. Every other room asks it; it asks none of them.
type platforms struct {
	adapters map[string]platform.Adapter
	display  map[string]string // platform → its name for people
	homes    map[string]string // configured homes; /sethome's in the store win
	st       store.Store
	log      *slog.Logger
	refused  *refusals // own lock
	// rep is this gateway's part among replicas sharing the store; nil
	// when it is alone.
	rep *replica

	mu     sync.Mutex
	status map[string]platform.Status // per platform, from its supervisor
}

func newPlatforms(adapters []platform.Adapter, cfg Config) (*platforms, error) {
	p := &platforms{
		adapters: map[string]platform.Adapter{},
		display:  cfg.Display,
		homes:    cfg.Homes,
		st:       cfg.Store,
		log:      cfg.Log,
		refused:  newRefusals(maxRefusedPlaces),
		status:   map[string]platform.Status{},
		rep:      newReplica(cfg),
	}
	for _, a := range adapters {
		if _, dup := p.adapters[a.Name()]; dup {
			return nil, fmt.Errorf("gateway: two adapters named %q", a.Name())
		}
		p.adapters[a.Name()] = a
	}
	return p, nil
}

// adapter is the adapter of a platform this gateway runs.
func (p *platforms) adapter(name string) (platform.Adapter, bool) {
	a, ok := p.adapters[name]
	return a, ok
}

// names are the platforms this gateway runs, sorted.
func (p *platforms) names() []string {
	out := make([]string, 0, len(p.adapters))
	for n := range p.adapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// setStatus keeps what a platform's supervisor said and returns what it
// said before.
func (p *platforms) setStatus(name string, s platform.Status) (prev platform.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev = p.status[name]
	p.status[name] = s
	return prev
}

// statusOf is what the supervisor last said of a platform.
func (p *platforms) statusOf(name string) platform.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status[name]
}

func (p *platforms) isLive(name string) bool {
	return p.statusOf(name).State == platform.StateLive
}

// ledElsewhere reports whether another replica sharing the store reads
// the platform now: it takes handoffs there, and sends there what waits.
func (p *platforms) ledElsewhere(ctx context.Context, name string) bool {
	_, ok := p.rep.leadElsewhere(ctx, name)
	return ok
}

// live are the platforms live now, sorted.
func (p *platforms) live() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for name, s := range p.status {
		if s.State == platform.StateLive {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// displayName is a platform's name for people.
func (p *platforms) displayName(name string) string {
	if d := p.display[name]; d != "" {
		return d
	}
	return name
}

// placeName names a place (a platform, or the terminal) for people.
func (p *platforms) placeName(name string) string {
	return place.Name(name, TerminalPlatform, p.display)
}

// holderName names the place an address key is, for people.
func (p *platforms) holderName(key string) string {
	return place.NameOf(key, TerminalPlatform, p.display)
}

// notLive says why a platform cannot take a handoff now, for people.
func (p *platforms) notLive(name string, st platform.Status) string {
	d := p.displayName(name)
	switch st.State {
	case platform.StateDown:
		return fmt.Sprintf("%s is down (%s); the gateway keeps trying to reconnect — see `baton gateway status`", d, st.Reason)
	case platform.StateRefused:
		return fmt.Sprintf("%s refused baton's credentials (%s); fix them in config.yaml or the environment and restart the gateway", d, st.Reason)
	case platform.StateStopped:
		return d + " has stopped with the gateway"
	}
	return d + " is still connecting; try again in a moment (`baton gateway status` shows it)"
}

// linkFor is an address people can open for the place key names, where
// its platform gives one.
func (p *platforms) linkFor(key string) string {
	addr, err := platform.ParseKey(key)
	if err != nil {
		return ""
	}
	if l, ok := p.adapters[addr.Platform].(platform.Linker); ok {
		return l.Link(addr)
	}
	return ""
}

// homeChats merges configured homes with those set by /sethome.
func (p *platforms) homeChats(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for name, k := range p.homes {
		out[name] = k
	}
	set, err := p.st.HomeChannels(ctx)
	if err != nil {
		return nil, fmt.Errorf("load home channels: %w", err)
	}
	for name, k := range set {
		out[name] = k
	}
	return out, nil
}

// knownUnsupported reports whether capability was refused at place before
// (or by its whole platform).
func (p *platforms) knownUnsupported(capability string, place platform.Address) bool {
	return p.refused.known(capability, place)
}

// noteUnsupported remembers a capability refused at place; it is logged
// once per place, or once for a platform whose server lacks it.
func (p *platforms) noteUnsupported(capability string, place platform.Address, err error) {
	everywhere, first := p.refused.note(capability, place, err)
	switch {
	case !first:
	case everywhere:
		p.log.Info("the service does not offer this at all; doing without it on this platform", "platform", place.Platform, "capability", capability, "err", err)
	default:
		p.log.Info("the service does not offer this here; doing without it in this place", "platform", place.Platform, "place", place.Key(), "capability", capability, "err", err)
	}
}

// retryable passes a platform's wait request on to the retry policy.
func retryable(err error) error {
	if cl, d := platform.Classify(err); cl == platform.ClassRetryAfter {
		return retry.After(d, err)
	}
	return err
}

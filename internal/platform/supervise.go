package platform

import (
	"context"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/retry"
)

// State is how a supervised platform is doing.
type State string

// The states of a platform.
const (
	StateStarting State = "starting" // Run is connecting; not live yet
	StateLive     State = "live"     // the service accepted baton; events flow
	StateDown     State = "down"     // Run failed; it is restarted at NextTry
	StateRefused  State = "refused"  // the credentials were refused; not restarted
	StateStopped  State = "stopped"  // the gateway is stopping
)

// Status is one platform's state as the gateway reports it.
type Status struct {
	State   State
	Reason  string    // why it is down or refused, in one line
	Since   time.Time // when it entered State
	NextTry time.Time // when Down: the next restart
}

// DefaultRestart is how a platform whose Run failed is restarted: soon at
// first, then at most every half minute (retry's cap), forever. A Prober
// is checked more often in between, cheaply.
func DefaultRestart() retry.Policy { return retry.Policy{First: time.Second} }

// Prober is an adapter that can ask its service cheaply whether it answers
// (Telegram's getMe), without connecting for events. While the platform
// is down, Supervise probes it between restarts and restarts it as soon
// as a probe succeeds: baton is back moments after its service, while
// full restarts (a login, a websocket) stay as rare as the backoff says.
type Prober interface {
	Probe(ctx context.Context) error
}

// probeEvery bounds the wait between two probes of a down platform; they
// start at the restart policy's first wait and back off to this.
const probeEvery = 2 * time.Second

// probeTimeout bounds one probe.
const probeTimeout = 10 * time.Second

// Supervise runs a's Run until ctx ends, restarting it with p's backoff
// whenever it ends for any reason but refused credentials; a run that was
// live for a minute or more starts the backoff afresh. report hears every
// change of state (it must not block for long).
func Supervise(ctx context.Context, a Adapter, r Receiver, p retry.Policy, report func(Status)) {
	b := p.Backoff()
	for {
		var (
			mu        sync.Mutex
			liveSince time.Time
		)
		report(Status{State: StateStarting, Since: time.Now()})
		err := a.Run(ctx, liveReceiver{Receiver: r, live: func() {
			mu.Lock()
			first := liveSince.IsZero()
			if first {
				liveSince = time.Now()
			}
			mu.Unlock()
			if first {
				report(Status{State: StateLive, Since: time.Now()})
			}
		}})
		if ctx.Err() != nil {
			report(Status{State: StateStopped, Since: time.Now()})
			return
		}
		if err == nil {
			err = errors.New("the connection ended")
		}
		if errors.Is(err, ErrRefused) {
			report(Status{State: StateRefused, Reason: OneLine(err), Since: time.Now()})
			return
		}
		mu.Lock()
		healthy := !liveSince.IsZero() && time.Since(liveSince) >= time.Minute
		mu.Unlock()
		if healthy {
			b.Reset()
		}
		wait := b.NextBackOff()
		if _, ra := Classify(err); ra > wait {
			wait = ra
		}
		now := time.Now()
		report(Status{State: StateDown, Reason: OneLine(err), Since: now, NextTry: now.Add(wait)})
		if !awaitRestart(ctx, a, wait, p) {
			report(Status{State: StateStopped, Since: time.Now()})
			return
		}
	}
}

// awaitRestart waits wait before a restart, or less when a is a Prober
// whose service answers a probe meanwhile. It reports whether ctx is
// still live.
func awaitRestart(ctx context.Context, a Adapter, wait time.Duration, p retry.Policy) bool {
	pr, ok := a.(Prober)
	if !ok {
		return retry.Sleep(ctx, wait)
	}
	first := p.First
	if first <= 0 {
		first = probeEvery
	}
	probes := retry.Policy{First: min(first, probeEvery), Max: probeEvery}.Backoff()
	due := time.Now().Add(wait)
	for {
		left := time.Until(due)
		next := probes.NextBackOff()
		if left <= next {
			return retry.Sleep(ctx, left)
		}
		if !retry.Sleep(ctx, next) {
			return false
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := pr.Probe(pctx)
		cancel()
		if err == nil {
			return ctx.Err() == nil
		}
	}
}

// liveReceiver passes events on and tells the supervisor about Live.
type liveReceiver struct {
	Receiver
	live func()
}

func (l liveReceiver) Live() {
	l.live()
	l.Receiver.Live()
}

// Redeliver passes the request on when the receiver takes it.
func (l liveReceiver) Redeliver(at Address) {
	if r, ok := l.Receiver.(Redeliverer); ok {
		r.Redeliver(at)
	}
}

var (
	tagRE   = regexp.MustCompile(`<[^>]*>`)
	titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
)

// maxReason bounds a reason shown in a status line.
const maxReason = 200

// OneLine is err as one short line for a status: a server's HTML error
// page becomes its title (or its text), whitespace is collapsed, and it is
// cut to 200 characters.
func OneLine(err error) string {
	if err == nil {
		return ""
	}
	return oneLine(err.Error())
}

func oneLine(s string) string {
	if strings.Contains(s, "<") && strings.Contains(s, ">") && tagRE.MatchString(s) {
		if m := titleRE.FindStringSubmatch(s); m != nil {
			head, _, _ := strings.Cut(s, "<")
			s = head + strings.TrimSpace(m[1])
		} else {
			s = tagRE.ReplaceAllString(s, " ")
		}
		s = html.UnescapeString(s)
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason-1]) + "…"
	}
	return s
}

// Describe is a status for people: "live", "down since 14:02 (next try
// 14:03): reason", "refused: reason".
func (s Status) Describe() string {
	switch s.State {
	case StateDown:
		out := "down since " + s.Since.Format(time.TimeOnly)
		if !s.NextTry.IsZero() {
			out += fmt.Sprintf(" (next try in %s)", time.Until(s.NextTry).Round(time.Second))
		}
		if s.Reason != "" {
			out += ": " + s.Reason
		}
		return out
	case StateRefused:
		return "refused: " + s.Reason
	}
	return string(s.State)
}

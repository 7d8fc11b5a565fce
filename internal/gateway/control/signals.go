package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/baton-agent/baton/internal/store"
)

// A terminal and a gateway on different machines share only the store.
// When the store carries signals (store.Signals: the Postgres store), they
// carry what the control socket carries on one machine, as wake-ups; the
// record is always in the store, which each side also reads now and then
// as the fallback for a signal lost.

// Topics of the signals between terminals and gateways.
const (
	// TopicHandoffs: a handoff was requested (payload: its id); gateways
	// look for pending handoffs now.
	TopicHandoffs = "baton_handoffs"
	// TopicProgress: a handoff moved on (payload: a Progress, see
	// ProgressPayload); the terminal that asked for it follows it.
	TopicProgress = "baton_progress"
	// TopicNotices: a notice was stored for a chat (payload: its address
	// key); a gateway running that chat sends it now.
	TopicNotices = "baton_notices"
	// TopicPairings: a pairing was approved (payload: the platform) and
	// its welcome stored; a gateway sends it now.
	TopicPairings = "baton_pairings"
	// TopicTerminal: a session was handed off to the terminal (payload:
	// the session's id); a terminal open on it, or at its prompt, says so.
	TopicTerminal = "baton_terminal"
	// TopicSent: a replica sent a delivery to a platform whose people
	// connect to one replica each (payload: see SentPayload); the other
	// replicas show it to theirs.
	TopicSent = "baton_sent"
)

// Sent is what a TopicSent signal says: which replica sent which
// delivery (by its key).
type Sent struct {
	Replica string `json:"r"`
	Key     string `json:"k"`
}

// GatewayTopics are what a gateway listens to: what wakes its handoff
// worker.
var GatewayTopics = []string{TopicHandoffs, TopicNotices, TopicPairings}

// SignalsOf is st's signals, when it carries them.
func SignalsOf(st any) (store.Signals, bool) {
	s, ok := st.(store.Signals)
	return s, ok
}

// Kick wakes the gateways that should look at the store now: the one on
// this machine over its socket at home, and every one listening on topic
// when st carries signals. It fails only when it reached no one: no
// gateway on this machine and no signal sent (wrapping ErrNoGateway when
// st has no signals).
func Kick(ctx context.Context, home string, st store.Store, topic, payload string) error {
	err := NewClient(SocketPath(home)).Kick(ctx)
	sig, ok := SignalsOf(st)
	if !ok {
		return err
	}
	if nerr := sig.Notify(ctx, topic, payload); nerr != nil && err != nil {
		return errors.Join(err, nerr)
	}
	return nil
}

// ProgressPayload is p as a signal carries it. A link with a query or a
// fragment (the web chat's, carrying its token) is left out: whoever may
// listen on the database would read it; the terminal names the place
// instead.
func ProgressPayload(p Progress) string {
	if u, err := url.Parse(p.Link); err != nil || u.RawQuery != "" || u.Fragment != "" {
		p.Link = ""
	}
	if len(p.Error) > store.MaxHandoffError {
		p.Error = store.TruncateReason(p.Error)
	}
	b, _ := json.Marshal(p)
	if len(b) > store.MaxSignalPayload {
		p.Step = "" // a step's words are the only part without a bound
		b, _ = json.Marshal(p)
	}
	return string(b)
}

// ParseProgress reads a TopicProgress payload.
func ParseProgress(payload string) (Progress, error) {
	var p Progress
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return Progress{}, fmt.Errorf("a handoff's progress signal: %w", err)
	}
	return p, nil
}

// HandoffPayload is a handoff id as TopicHandoffs carries it.
func HandoffPayload(id int64) string { return strconv.FormatInt(id, 10) }

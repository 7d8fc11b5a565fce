package gateway

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/platform"
)

// defaultEditEvery paces streamed edits on a platform that does not say.
const defaultEditEvery = time.Second

// firstPostWait is how long a reply is written before its first words are
// posted (or the platform's pace, if shorter): a reply finished sooner is
// posted once, whole, by the outbox — one call to the service instead of a
// post and an edit, and nothing shown half-written.
const firstPostWait = 300 * time.Millisecond

// editStream shows a reply while the model writes it, on a platform that
// can edit messages: the first words are posted (once the reply has been
// written for firstPostWait), and the message is
// edited as more arrive, at most once per the platform's pace; past the
// length limit the rest goes on in a new message. Text written before a
// tool call stays as it was shown; the text after it starts anew. The
// final answer is still delivered through the outbox, which edits the
// streamed messages into their final form instead of posting again.
//
// Each message posted is recorded in the store as it is posted (under
// the answer's outbox key), so that a gateway stopped or killed
// mid-stream, taking the turn up at its next start, edits the message
// left half-written instead of posting the answer again below it.
type editStream struct {
	places *platforms
	rec    *streamedReplies
	a      platform.Adapter
	ed     platform.Editor
	addr   platform.Address
	key    string // the outbox key the answer will be delivered under
	every  time.Duration
	split  func(string) []string

	wake chan struct{}
	stop chan struct{} // closed by finish: no more rounds, not even paced ones
	done chan struct{}

	showing sync.Mutex // one round of sends and edits at a time

	mu     sync.Mutex
	text   string   // the segment being written
	ids    []string // messages posted for it, one per part
	shown  []string // what each shows
	broken bool     // a send or edit failed: stop streaming, the outbox delivers
}

// streamEdits starts an edit stream at addr, for the answer to be
// delivered under key, when the platform can edit and has no Streamer of
// its own; nil otherwise. A resumed turn (its input stored by an earlier
// run) takes over the messages that run streamed for key and left
// half-written: the stream edits them.
func streamEdits(ctx context.Context, places *platforms, rec *streamedReplies, a platform.Adapter, addr platform.Address, key string, resumed bool) *editStream {
	ed, ok := a.(platform.Editor)
	if !ok || places.knownUnsupported(capEdits, addr) {
		return nil
	}
	s := &editStream{places: places, rec: rec, a: a, ed: ed, addr: addr, key: key, every: defaultEditEvery,
		split: func(t string) []string { return []string{t} },
		wake:  make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if resumed {
		s.ids = rec.before(ctx, addr, key)
		s.shown = make([]string, len(s.ids)) // unknown: the first round edits them
	}
	if p, ok := a.(platform.EditPacer); ok && p.EditEvery() > 0 {
		s.every = p.EditEvery()
	}
	if l, ok := a.(platform.Limiter); ok {
		s.split = func(t string) []string { return platform.Split(t, l.MaxMessageLen(), l.MessageLen) }
	}
	go s.loop(ctx)
	return s
}

// event takes the turn's events: text grows the segment, a tool call ends
// it.
func (s *editStream) event(ev agent.Event) {
	switch ev.Kind {
	case agent.EventTextDelta:
		s.mu.Lock()
		s.text += ev.Text
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	case agent.EventToolStarted:
		// What was written so far stays shown as it is; show its end now.
		s.mu.Lock()
		text := s.text
		s.mu.Unlock()
		if text != "" {
			s.show(context.WithoutCancel(context.Background()), text)
		}
		s.mu.Lock()
		posted := len(s.ids)
		s.text, s.ids, s.shown = "", nil, nil
		s.mu.Unlock()
		s.rec.forget(context.Background(), s.addr, s.key, posted) // shown as they stay
	}
}

// finish stops the stream and returns the messages posted for the last
// segment, which the final answer's parts replace by edits. It does not
// wait out the pace: the final answer is due now.
func (s *editStream) finish() []string {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return nil
	}
	return append([]string(nil), s.ids...)
}

func (s *editStream) loop(ctx context.Context) {
	defer close(s.done)
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-s.wake:
		}
		if first {
			first = false
			if !s.wait(ctx, min(s.every, firstPostWait)) {
				return // finished within the wait: the outbox posts it whole
			}
		}
		s.mu.Lock()
		text := s.text
		s.mu.Unlock()
		s.show(ctx, text)
		// Pace: at most one round of edits per interval.
		if !s.wait(ctx, s.every) {
			return
		}
	}
}

// wait waits d, unless the stream is finished or ctx ends first; it
// reports whether the whole wait passed.
func (s *editStream) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

// show brings the posted messages up to text, one try per call: a failure
// stops streaming, and the outbox delivers the answer as usual.
func (s *editStream) show(ctx context.Context, text string) {
	s.showing.Lock()
	defer s.showing.Unlock()
	s.mu.Lock()
	if s.broken {
		s.mu.Unlock()
		return
	}
	ids, shown := append([]string(nil), s.ids...), append([]string(nil), s.shown...)
	s.mu.Unlock()
	for i, part := range s.split(text) {
		if strings.TrimSpace(part) == "" {
			break
		}
		var err error
		switch {
		case i >= len(ids):
			var id string
			if id, err = s.a.Send(ctx, s.addr, part); err == nil {
				ids, shown = append(ids, id), append(shown, part)
				s.rec.record(ctx, s.addr, s.key, i, id)
			}
		case shown[i] != part:
			if err = s.ed.Edit(ctx, s.addr, ids[i], part); err == nil {
				shown[i] = part
			}
		}
		if err != nil {
			if cl, _ := platform.Classify(err); cl == platform.ClassUnsupported {
				s.places.noteUnsupported(capEdits, s.addr, err)
			} else {
				s.places.log.Debug("streamed edit failed; the answer comes whole", "to", s.addr.Key(), "err", err)
			}
			s.mu.Lock()
			s.broken = true
			s.ids, s.shown = ids, shown
			s.mu.Unlock()
			return
		}
	}
	s.mu.Lock()
	s.ids, s.shown = ids, shown
	s.mu.Unlock()
}

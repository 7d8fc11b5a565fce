package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
)

// continueNote tells the model, on the call that resumes an answer cut off
// by a stop or crash, to go on from the kept part rather than start anew.
const continueNote = "Your previous answer was cut off when baton stopped; the last assistant message is the part already written and shown. " +
	"Continue it from exactly where it stops, without repeating any of it."

// drafter keeps the answer of one model call in the store while it is
// written, at most once per interval and from its own goroutine, so that
// a slow store never holds the stream up. Failures are only logged: the
// draft is a safety copy, the answer is stored whole when it is complete.
type drafter struct {
	st      Drafts
	session string
	prefix  string // the kept part a continued answer starts with

	mu      sync.Mutex
	text    string // written so far after prefix
	written string

	stop chan struct{}
	done chan struct{}
}

// startDraft keeps the answer about to be written, after prefix; nil when
// the store keeps no drafts.
func (t *turn) startDraft(ctx context.Context, prefix string) *drafter {
	st, ok := t.a.Store.(Drafts)
	if !ok {
		return nil
	}
	every := t.a.DraftEvery
	if every <= 0 {
		every = DefaultDraftEvery
	}
	d := &drafter{st: st, session: t.session, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{})}
	go d.loop(ctx, every)
	return d
}

// update records what was written so far; the loop stores it.
func (d *drafter) update(text string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.text = text
	d.mu.Unlock()
}

// finish stops keeping the draft and waits for a write in flight, so none
// lands after the answer that clears it.
func (d *drafter) finish() {
	if d == nil {
		return
	}
	close(d.stop)
	<-d.done
}

func (d *drafter) loop(ctx context.Context, every time.Duration) {
	defer close(d.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.stop:
			return
		case <-tick.C:
		}
		d.mu.Lock()
		text := d.text
		d.mu.Unlock()
		if text == d.written {
			continue
		}
		if err := keepDraft(ctx, d.st, d.session, continued(d.prefix, text)); err != nil {
			slog.Debug("keep the answer being written", "session", d.session, "err", err)
			continue
		}
		d.written = text
	}
}

// keepDraft stores text as the session's draft: one try, detached from
// cancellation so that a suspended turn can still keep what it wrote.
func keepDraft(ctx context.Context, st Drafts, sessionID, text string) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return st.SetDraft(wctx, sessionID, text)
}

// continued joins the kept part of an answer and what the model wrote
// after it. The kept part is sent without its trailing space (models
// refuse or mangle a final message ending in one), so the continuation
// usually brings its own.
func continued(kept, more string) string {
	if kept == "" {
		return more
	}
	head := strings.TrimRightFunc(kept, unicode.IsSpace)
	if more == "" || strings.IndexFunc(more, unicode.IsSpace) == 0 {
		return head + more
	}
	return kept + more
}

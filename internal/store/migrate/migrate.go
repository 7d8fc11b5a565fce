// Package migrate moves every row of one store into another, empty one
// (baton migrate: a SQLite file into a Postgres database), and shows
// that the copy is whole: what each side counts, and a checksum of every
// session's transcript as each side reads it back.
package migrate

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// Source is a store that can be moved.
type Source interface {
	store.Store
	store.Dumper
	store.Counter
}

// Target is a store that can take one in.
type Target interface {
	store.Store
	store.Importer
	store.Counter
}

// Report is what a move copied, as each side tells it.
type Report struct {
	From, To map[string]int64 // store.CountKinds on each side
	Sessions []Sum            // every session, in the order they were made
	Messages int64            // rows copied
	Copy     time.Duration    // the import alone, counts and checks aside
	Copied   bool             // the import committed: the target holds the copy
}

// Sum is one session's transcript checksum on each side.
type Sum struct {
	SessionID string
	Messages  int // its History, superseded rows included
	From, To  [32]byte
}

// ErrDiffers is Run's answer when the copy is not what the source holds.
var ErrDiffers = errors.New("the copy differs from the store it was made from")

// Run copies every row of from into to, which must be empty
// (store.ErrNotEmpty), in one transaction of to's, then counts both and
// sums each session's History on both. A copy that differs is
// ErrDiffers, with the report saying where.
func Run(ctx context.Context, from Source, to Target) (Report, error) {
	var r Report
	start := time.Now()
	err := to.Import(ctx, func(load func(store.Batch) error) error {
		return from.Dump(ctx, func(b store.Batch) error {
			for _, s := range b.Sessions {
				r.Sessions = append(r.Sessions, Sum{SessionID: s.ID})
			}
			r.Messages += int64(len(b.Messages))
			return load(b)
		})
	})
	r.Copy = time.Since(start)
	if err != nil {
		return r, err
	}
	r.Copied = true
	if r.From, err = from.Count(ctx); err != nil {
		return r, err
	}
	if r.To, err = to.Count(ctx); err != nil {
		return r, err
	}
	for i := range r.Sessions {
		sum := &r.Sessions[i]
		a, err := from.History(ctx, sum.SessionID)
		if err != nil {
			return r, err
		}
		b, err := to.History(ctx, sum.SessionID)
		if err != nil {
			return r, err
		}
		sum.Messages, sum.From, sum.To = len(a), store.TranscriptSum(a), store.TranscriptSum(b)
	}
	if d := r.Differences(); len(d) > 0 {
		return r, fmt.Errorf("%w: %s", ErrDiffers, d[0])
	}
	return r, nil
}

// Differences lists, one line each, every count and checksum that is not
// the same on both sides.
func (r Report) Differences() []string {
	var out []string
	for _, k := range store.CountKinds {
		if r.From[k] != r.To[k] {
			out = append(out, fmt.Sprintf("%s: %d before, %d in the copy", k, r.From[k], r.To[k]))
		}
	}
	for _, s := range r.Sessions {
		if s.From != s.To {
			out = append(out, fmt.Sprintf("session %s: its transcript's checksum differs", s.SessionID))
		}
	}
	return out
}

// Write prints the report for people: the counts side by side, then
// each session's transcript checksum on each side (the first 16 hex
// digits of its SHA-256).
func (r Report) Write(w io.Writer, fromName, toName string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%s\t%s\t\n", fromName, toName)
	for _, k := range store.CountKinds {
		mark := ""
		if r.From[k] != r.To[k] {
			mark = "  DIFFERS"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", k, r.From[k], r.To[k], mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTranscripts (SHA-256 of every message, superseded ones included, in order):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "session\tmessages\t%s\t%s\t\n", fromName, toName)
	for _, s := range r.Sessions {
		mark := "same"
		if s.From != s.To {
			mark = "DIFFERS"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.SessionID, s.Messages, hex.EncodeToString(s.From[:8]), hex.EncodeToString(s.To[:8]), mark)
	}
	return tw.Flush()
}

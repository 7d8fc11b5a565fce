package agent

import (
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/llm"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventTextDelta is a piece of the model's answer, in order.
	EventTextDelta EventKind = iota + 1
	// EventToolStarted: Call is about to run (after any approval).
	EventToolStarted
	// EventToolFinished: Call ran, was denied or cancelled; Output is the
	// result cut to DisplayLimit, Err the tool's failure if any.
	EventToolFinished
	// EventApprovalNeeded: Approval is being put to the Approver.
	EventApprovalNeeded
	// EventCompressed: the transcript was compressed; Before/After are
	// estimated tokens.
	EventCompressed
	// EventDone: the turn ended with an answer (Text) and Usage.
	EventDone
	// EventError: the turn ended without an answer; Err says why. Run
	// returns the same error.
	EventError
	// EventStoreTrouble: the store refused to record the turn for a
	// reason that may pass (Err: busy, locked, disk full). The write is
	// tried again under StoreRetry, what the model said kept meanwhile;
	// the turn goes on once it succeeds, or ends with ErrStore.
	EventStoreTrouble
	// EventFiles: Call gave Files to send to the person (SendFile),
	// stored with its result.
	EventFiles
)

func (k EventKind) String() string {
	switch k {
	case EventTextDelta:
		return "text_delta"
	case EventToolStarted:
		return "tool_started"
	case EventToolFinished:
		return "tool_finished"
	case EventApprovalNeeded:
		return "approval_needed"
	case EventCompressed:
		return "compressed"
	case EventDone:
		return "done"
	case EventError:
		return "error"
	case EventStoreTrouble:
		return "store_trouble"
	case EventFiles:
		return "files"
	}
	return "unknown"
}

// DisplayLimit is how much of a tool's output an EventToolFinished carries;
// the model gets the whole result.
const DisplayLimit = 2000

// Event is what renderers (the terminal, chat gateways) consume. Events of
// one turn are emitted in order from the goroutine running the turn; emit
// should return quickly.
type Event struct {
	Kind      EventKind
	SessionID string
	Text      string          // TextDelta: the piece; Done: the final answer
	Call      llm.ToolCall    // ToolStarted, ToolFinished, ApprovalNeeded
	Output    string          // ToolFinished
	Truncated bool            // ToolFinished: Output was cut for display
	Err       error           // ToolFinished, Error, StoreTrouble
	Approval  ApprovalRequest // ApprovalNeeded
	Usage     llm.Usage       // Done: the whole turn
	Before    int             // Compressed
	After     int             // Compressed
	Files     []OutFile       // Files
}

// displayCut shortens s to DisplayLimit bytes without splitting a character.
func displayCut(s string) (string, bool) {
	if len(s) <= DisplayLimit {
		return s, false
	}
	cut := DisplayLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

package store

import "context"

// Signals is what a store shared by processes on several machines (the
// Postgres store) offers so that they wake one another: a signal sent on
// a topic reaches every process listening on it, through the store's own
// server. A signal is a wake-up, never the record: whatever it speaks of
// is written to the store first, and a listener reads the store for it.
// Polling the store stays as the fallback for a signal lost.
//
// The SQLite store has none: processes on one machine reach one another
// over the gateway's control socket. Consumers find it by type assertion.
type Signals interface {
	// Notify sends payload (at most MaxSignalPayload bytes) on topic to
	// every process listening on it now, this one included.
	Notify(ctx context.Context, topic, payload string) error
	// Listen returns the signals sent on topics from the moment it
	// returns until ctx ends, when the channel is closed. A connection
	// lost is made again; once it is, a signal with Missed set is sent on
	// each topic, since what was sent meanwhile did not arrive.
	Listen(ctx context.Context, topics ...string) (<-chan Signal, error)
}

// MaxSignalPayload bounds a signal's payload (Postgres's own bound on a
// NOTIFY payload is a little under 8000 bytes).
const MaxSignalPayload = 7000

// Signal is one signal heard.
type Signal struct {
	Topic   string
	Payload string
	// Missed says signals on Topic may have been lost (the connection
	// was down): read the store for what changed.
	Missed bool
}

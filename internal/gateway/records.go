package gateway

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/store"
)

// storeTimeout bounds one store write made on delivery's behalf.
const storeTimeout = 10 * time.Second

// errNotRecorded marks a failure to record a turn or its reply in the
// store, for a reason that may pass: the message is handled again.
var errNotRecorded = errors.New("not recorded")

// notRecorded marks err as errNotRecorded when it may pass.
func notRecorded(what string, err error) error {
	if store.Transient(err) || errors.Is(err, agent.ErrStore) {
		return fmt.Errorf("%s: %w: %w", what, errNotRecorded, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Outbox keys: each message a gateway sends is stored under one, so a
// retry of the same key never posts twice.

// inKey is the outbox key of the answer to inbound event id.
func inKey(id int64) string { return "in:" + strconv.FormatInt(id, 10) }

// handoffKey is the outbox key of a handoff's first message; its notices
// are keyed below it (handoffKey(id)+":left").
func handoffKey(id int64) string { return "handoff:" + strconv.FormatInt(id, 10) }

// partKey is the outbox key of part i of the reply stored under key.
func partKey(key string, i int) string { return key + ":part:" + strconv.Itoa(i) }

// fileKey is the outbox key of the i-th file a turn answering key sends.
func fileKey(key string, i int) string { return key + ":file:" + strconv.Itoa(i) }

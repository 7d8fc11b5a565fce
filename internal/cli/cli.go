// Package cli is baton's terminal: the REPL with streamed, markdown-rendered
// answers, approvals and slash commands, the one-shot mode for scripts, and
// the `baton sessions` commands. cmd/baton only wires flags to it; what it
// works on (configuration, store, owner, model) is an app.App.
package cli

import "github.com/baton-agent/baton/internal/owner"

// HistoryFile is the REPL's line history inside BATON_HOME.
const HistoryFile = "history"

// Platform is what terminal sessions and messages are stamped with.
const Platform = owner.Platform

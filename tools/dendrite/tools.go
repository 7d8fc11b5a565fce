//go:build tools

// Package dendrite pins the Matrix homeserver baton's Matrix tests run
// against. It is a module of its own so that Dendrite (AGPL) is never
// linked into baton: .ci/run builds its commands into a cache directory
// and the tests start them as separate processes.
package dendrite

import (
	_ "github.com/element-hq/dendrite/cmd/dendrite"
	_ "github.com/element-hq/dendrite/cmd/generate-config"
	_ "github.com/element-hq/dendrite/cmd/generate-keys"
)

package gateway

import (
	"context"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// PlatformMemory is one platform's platform.Memory, kept in the store.
type PlatformMemory struct {
	Store    store.PlatformStates
	Platform string
}

var _ platform.Memory = PlatformMemory{}

// Get reads the platform's value under key; "" when none was set.
func (s PlatformMemory) Get(ctx context.Context, key string) (string, error) {
	return s.Store.PlatformState(ctx, s.Platform, key)
}

// Set stores the platform's value under key; "" clears it.
func (s PlatformMemory) Set(ctx context.Context, key, value string) error {
	return s.Store.SetPlatformState(ctx, s.Platform, key, value)
}

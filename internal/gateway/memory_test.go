package gateway_test

import (
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

func TestPlatformMemoryIsScopedToItsPlatform(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mx := gateway.PlatformMemory{Store: st, Platform: "matrix"}
	other := gateway.PlatformMemory{Store: st, Platform: "slack"}
	if err := mx.Set(t.Context(), "since", "s1"); err != nil {
		t.Fatal(err)
	}
	if v, err := mx.Get(t.Context(), "since"); err != nil || v != "s1" {
		t.Errorf("matrix since = %q, %v", v, err)
	}
	if v, err := other.Get(t.Context(), "since"); err != nil || v != "" {
		t.Errorf("another platform sees %q, %v", v, err)
	}
	if v, err := st.PlatformState(t.Context(), "matrix", "since"); err != nil || v != "s1" {
		t.Errorf("in the store: %q, %v", v, err)
	}
}

package signal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/signal"
)

func TestSpec(t *testing.T) {
	open := func(section string, env map[string]string) (platform.Adapter, error) {
		return signal.Spec().Open(context.Background(), platformtest.Setup(t, signal.Name, section, env))
	}
	if _, err := open("", nil); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("no account: %v", err)
	}
	a, err := open("", map[string]string{signal.EnvAccount: "+4915550000"})
	if err != nil || a.Name() != "signal" {
		t.Errorf("account from the environment: %v %v", a, err)
	}
	if _, err := open("account: \"+4915550000\"\nurl: http://127.0.0.1:7583\n", nil); err != nil {
		t.Errorf("section: %v", err)
	}
	if s := signal.Spec(); s.Display != "Signal" || s.Trusted {
		t.Errorf("spec %+v", s)
	}
}

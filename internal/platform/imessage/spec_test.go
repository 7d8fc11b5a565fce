package imessage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/imessage"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

func TestSpec(t *testing.T) {
	open := func(section string, env map[string]string) (platform.Adapter, error) {
		return imessage.Spec().Open(context.Background(), platformtest.Setup(t, imessage.Name, section, env))
	}
	if _, err := open("", nil); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("nothing set: %v", err)
	}
	if _, err := open("url: http://mac.local:1234\n", nil); err == nil {
		t.Error("a section without a password was accepted")
	}
	a, err := open("listen: 127.0.0.1:0\n", map[string]string{imessage.EnvURL: "http://mac.local:1234", imessage.EnvPassword: "pw"})
	if err != nil {
		t.Fatalf("from the environment: %v", err)
	}
	a.(*imessage.Adapter).Close()
	a, err = open("url: http://mac.local:1234\npassword: pw\nlisten: 127.0.0.1:0\nprivate_api: true\n", nil)
	if err != nil || a.Name() != "imessage" {
		t.Fatalf("section: %v", err)
	}
	a.(*imessage.Adapter).Close()
}

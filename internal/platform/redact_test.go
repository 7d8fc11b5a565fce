package platform_test

import (
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

func TestRedactedSaysWhetherASecretIsSetNotWhatItIs(t *testing.T) {
	if got := platform.Redacted(""); got != "(none)" {
		t.Errorf("no secret shows as %q", got)
	}
	if got := platform.Redacted("xoxb-very-secret"); got != "(set)" {
		t.Errorf("a secret shows as %q", got)
	}
}

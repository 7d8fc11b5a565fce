package platform_test

import (
	"errors"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

func TestSectionOrEnvPrefersTheSection(t *testing.T) {
	env := map[string]string{"X_TOKEN": "  from-env\n"}
	s := platform.Setup{Env: func(k string) string { return env[k] }}
	for _, tc := range []struct{ value, env, want string }{
		{" from-section ", "X_TOKEN", "from-section"},
		{"", "X_TOKEN", "from-env"},
		{"  ", "X_TOKEN", "from-env"}, // blank says nothing
		{"", "Y_TOKEN", ""},
	} {
		if got := s.SectionOrEnv(tc.value, tc.env); got != tc.want {
			t.Errorf("SectionOrEnv(%q, %s) = %q, want %q", tc.value, tc.env, got, tc.want)
		}
	}
	if got := (platform.Setup{}).SectionOrEnv("", "X_TOKEN"); got != "" {
		t.Errorf("without Env: %q", got)
	}
}

func TestDecodeSection(t *testing.T) {
	var v struct{ A string }
	v.A = "kept"
	if err := (platform.Setup{}).DecodeSection(&v); err != nil || v.A != "kept" {
		t.Errorf("without Decode: %v, %q", err, v.A)
	}
	bad := errors.New("unknown field")
	s := platform.Setup{Decode: func(any) error { return bad }}
	if err := s.DecodeSection(&v); !errors.Is(err, bad) {
		t.Errorf("Decode's error lost: %v", err)
	}
}

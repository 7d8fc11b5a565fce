package matrix

import (
	"context"
	"errors"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// Section is the matrix: section of config.yaml. Each field may come from
// the environment instead (the section wins).
type Section struct {
	// Homeserver is the client-server API's base URL; MATRIX_HOMESERVER.
	Homeserver string `yaml:"homeserver"`
	// UserID is the bot's Matrix id, checked against the token;
	// MATRIX_USER_ID.
	UserID string `yaml:"user_id"`
	// AccessToken is the bot account's access token; MATRIX_ACCESS_TOKEN.
	AccessToken string `yaml:"access_token"`
}

// Spec registers Matrix: enabled when an access token is set, in the
// matrix: section or in MATRIX_ACCESS_TOKEN.
func Spec() platform.Spec {
	return platform.Spec{Name: Name, Display: "Matrix", Open: open}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if s.Decode != nil {
		if err := s.Decode(&sec); err != nil {
			return nil, err
		}
	}
	env := func(k string) string {
		if s.Env == nil {
			return ""
		}
		return strings.TrimSpace(s.Env(k))
	}
	pick := func(v, k string) string {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
		return env(k)
	}
	tok := pick(sec.AccessToken, EnvToken)
	if tok == "" {
		return nil, platform.ErrNotConfigured
	}
	hs := pick(sec.Homeserver, EnvHomeserver)
	if hs == "" {
		return nil, errors.New("matrix: an access token is set but no homeserver: set matrix.homeserver in config.yaml or " + EnvHomeserver)
	}
	return New(Config{
		HomeserverURL: hs,
		UserID:        pick(sec.UserID, EnvUserID),
		AccessToken:   tok,
		Owners:        s.Owners,
		Memory:        s.Memory,
		Logger:        s.Log,
	})
}

package matrix

import (
	"context"
	"errors"
	"fmt"
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
	return platform.Spec{Name: Name, Display: "Matrix", Open: open,
		CheckAddress: checkAddress, HomeForm: "matrix:group:!roomid:example.org"}
}

// checkAddress refuses what no Matrix room or thread is: baton speaks in
// rooms (matrix:group:ROOM) and threads (matrix:thread:ROOM:ROOT), a room
// named by its id — '!', then an opaque part, ':' and the server — and a
// thread by its root event's id, which starts with '$'.
func checkAddress(a platform.Address) error {
	switch a.Kind {
	case platform.Group, platform.Thread:
	default:
		return fmt.Errorf("matrix: %q is no kind of Matrix place: a room is matrix:group:<room id>, a thread matrix:thread:<room id>:<root event id>", a.Kind)
	}
	local, server, ok := strings.Cut(a.Chat, ":")
	switch {
	case strings.HasPrefix(a.Chat, "#"):
		return fmt.Errorf("matrix: %q is a room alias; write the room's id (Element: Room settings → Advanced), which starts with '!'", a.Chat)
	case !strings.HasPrefix(local, "!") || len(local) < 2 || !ok || server == "":
		return fmt.Errorf("matrix: %q is not a room id: a room id is '!', an opaque part, ':' and the server, e.g. !roomid:example.org", a.Chat)
	}
	switch {
	case a.Kind == platform.Thread && a.Thread == "":
		return errors.New("matrix: a thread needs its root event's id after the room's, e.g. matrix:thread:!roomid:example.org:$event")
	case a.Kind == platform.Group && a.Thread != "":
		return fmt.Errorf("matrix: a room has no part after its id (%q); a thread is matrix:thread:<room id>:<root event id>", a.Thread)
	case a.Thread != "" && (!strings.HasPrefix(a.Thread, "$") || len(a.Thread) < 2):
		return fmt.Errorf("matrix: %q is not an event id, which starts with '$'", a.Thread)
	}
	return nil
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	tok := s.SectionOrEnv(sec.AccessToken, EnvToken)
	if tok == "" {
		return nil, platform.ErrNotConfigured
	}
	hs := s.SectionOrEnv(sec.Homeserver, EnvHomeserver)
	if hs == "" {
		return nil, errors.New("matrix: an access token is set but no homeserver: set matrix.homeserver in config.yaml or " + EnvHomeserver)
	}
	return New(Config{
		HomeserverURL: hs,
		UserID:        s.SectionOrEnv(sec.UserID, EnvUserID),
		AccessToken:   tok,
		Owners:        s.Owners,
		Memory:        s.Memory,
		Logger:        s.Log,
	})
}

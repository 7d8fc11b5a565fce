package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/platform/web"
)

type noTranscripts struct{}

func (noTranscripts) Conversations(context.Context, string) ([]platform.Conversation, error) {
	return nil, nil
}
func (noTranscripts) View(context.Context, string) ([]platform.Line, error) { return nil, nil }

// assembleFrom assembles the registered platforms from a config.yaml and
// an environment.
func assembleFrom(t *testing.T, yaml string, env map[string]string) (assembly, error) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, config.FileName), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	return assemble(t.Context(), all.Specs(), cfg, environment{
		env:         func(k string) string { return env[k] },
		home:        home,
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		transcripts: noTranscripts{},
	})
}

func names(as assembly) []string {
	var out []string
	for _, a := range as.adapters {
		out = append(out, a.Name())
	}
	return out
}

// Every test listens on a free port: the default one may be taken.
const freePort = "web:\n  listen: 127.0.0.1:0\n"

func TestAssembleFollowsConfigAndEnvironment(t *testing.T) {
	as, err := assembleFrom(t, freePort, nil)
	if err != nil || !slices.Equal(names(as), []string{"web"}) {
		t.Fatalf("no credentials: %v, %v", names(as), err)
	}
	if !slices.Equal(as.trusted, []string{"web"}) || as.homes["web"] != web.Home.Key() || len(as.homes) != 1 {
		t.Errorf("trusted %v, homes %v", as.trusted, as.homes)
	}
	if as.display["web"] != "the web chat" || as.display["telegram"] != "Telegram" {
		t.Errorf("display %v", as.display)
	}

	as, err = assembleFrom(t, freePort, map[string]string{"TELEGRAM_BOT_TOKEN": "1:env"})
	if err != nil || !slices.Equal(names(as), []string{"web", "telegram"}) {
		t.Fatalf("token from the environment: %v, %v", names(as), err)
	}
	if _, ok := as.homes["telegram"]; ok || slices.Contains(as.trusted, "telegram") {
		t.Errorf("telegram got a default home or trust: %v %v", as.homes, as.trusted)
	}

	as, err = assembleFrom(t, freePort+"telegram:\n  token: \"1:config\"\ngateway:\n  homes:\n    telegram: \"telegram:dm:42\"\n    web: \"web:thread:main:x\"\n", nil)
	if err != nil || !slices.Equal(names(as), []string{"web", "telegram"}) {
		t.Fatalf("token from config: %v, %v", names(as), err)
	}
	if as.homes["telegram"] != "telegram:dm:42" || as.homes["web"] != "web:thread:main:x" {
		t.Errorf("configured homes not kept: %v", as.homes)
	}

	as, err = assembleFrom(t, "web:\n  enabled: false\n", nil)
	if err != nil || len(as.adapters) != 0 || len(as.homes) != 0 {
		t.Fatalf("nothing enabled: %v, %v, %v", names(as), as.homes, err)
	}
}

func TestAssembleRefusesBadConfig(t *testing.T) {
	_, err := assembleFrom(t, freePort+"telegarm:\n  token: x\n", nil)
	if err == nil || !strings.Contains(err.Error(), `"telegarm"`) || !strings.Contains(err.Error(), "telegram") {
		t.Errorf("unknown top-level key: %v", err)
	}
	_, err = assembleFrom(t, "web:\n  listen: 0.0.0.0:7878\n", nil)
	if err == nil || !strings.Contains(err.Error(), "web.listen") || !strings.Contains(err.Error(), "allow_remote") {
		t.Errorf("remote web.listen: %v", err)
	}
	_, err = assembleFrom(t, "web:\n  listen: nonsense\n", nil)
	if err == nil || !strings.Contains(err.Error(), "web.listen") {
		t.Errorf("bad web.listen: %v", err)
	}
	_, err = assembleFrom(t, freePort+"telegram:\n  tokn: x\n", nil)
	if err == nil || !strings.Contains(err.Error(), "tokn") {
		t.Errorf("unknown field in the telegram section: %v", err)
	}
}

func TestPlatformStateForPeople(t *testing.T) {
	now := time.Date(2026, 11, 23, 14, 2, 0, 0, time.Local)
	for _, tc := range []struct {
		p    control.Platform
		want string
	}{
		{control.Platform{State: "live", Live: true, Since: now}, "live"},
		{control.Platform{State: "starting"}, "starting"},
		{control.Platform{State: "down", Since: now, NextTry: now.Add(30 * time.Second), Error: "getMe: 502 Bad Gateway"},
			"down since 14:02:00, next try in 30s: getMe: 502 Bad Gateway"},
		{control.Platform{State: "refused", Since: now, Error: "Telegram refused the bot token (401 Unauthorized)"},
			"refused since 14:02:00: Telegram refused the bot token (401 Unauthorized)"},
		{control.Platform{Live: false, Error: "old gateway"}, "down: old gateway"},
	} {
		if got := platformState(tc.p, now); got != tc.want {
			t.Errorf("platformState(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// A platform's Setup carries its own owner ids and a memory scoped to it.
func TestSetupCarriesOwnersAndMemory(t *testing.T) {
	home := t.TempDir()
	yaml := "gateway:\n  owners:\n    probe: [\"@me:example.org\"]\n    other: [\"x\"]\n"
	if err := os.WriteFile(filepath.Join(home, config.FileName), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	var got platform.Setup
	probe := platform.Spec{Name: "probe", Open: func(_ context.Context, s platform.Setup) (platform.Adapter, error) {
		got = s
		return nil, platform.ErrNotConfigured
	}}
	var asked []string
	_, err = assemble(t.Context(), []platform.Spec{probe}, cfg, environment{
		env: func(string) string { return "" }, home: home, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		memory: func(name string) platform.Memory { asked = append(asked, name); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Owners, []string{"@me:example.org"}) || !slices.Equal(asked, []string{"probe"}) {
		t.Errorf("owners %v, memory asked for %v", got.Owners, asked)
	}
	// With no memory offered, Setup.Memory is nil rather than a panic.
	if _, err := assemble(t.Context(), []platform.Spec{probe}, cfg, environment{env: func(string) string { return "" }, home: home,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil || got.Memory != nil {
		t.Errorf("without memory: %v %v", err, got.Memory)
	}
}

// TestStatusCountsReplies: the replies waiting are counted in words that
// agree with their number.
func TestStatusCountsReplies(t *testing.T) {
	now := time.Date(2026, 11, 23, 14, 2, 0, 0, time.Local)
	var b strings.Builder
	writeStatus(&b, control.Status{PID: 7, Started: now, Platforms: []control.Platform{
		{Name: "telegram", State: "live", Live: true, Since: now, Home: "telegram:dm:1", Waiting: 1},
		{Name: "slack", State: "live", Live: true, Since: now, Home: "slack:dm:1", Waiting: 3},
	}}, now)
	for _, want := range []string{"1 reply waits to be sent", "3 replies wait to be sent"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}

// matrixOn enables Matrix from the environment (New does not contact the
// homeserver).
var matrixOn = map[string]string{"MATRIX_ACCESS_TOKEN": "syt_x", "MATRIX_HOMESERVER": "http://127.0.0.1:1", "MATRIX_USER_ID": "@baton:example.org"}

// A home is read as written: a Matrix room id keeps its server, whether
// the ':' in it is written as is (the README's form) or escaped (as
// /sethome stores it), and a thread's root comes after the whole room id.
func TestAssembleReadsHomesAsWritten(t *testing.T) {
	for written, want := range map[string]platform.Address{
		"matrix:group:!roomid:example.org":             {Platform: "matrix", Kind: platform.Group, Chat: "!roomid:example.org"},
		"matrix:group:!roomid%3Aexample.org":           {Platform: "matrix", Kind: platform.Group, Chat: "!roomid:example.org"},
		"matrix:group:!roomid:example.org:8448":        {Platform: "matrix", Kind: platform.Group, Chat: "!roomid:example.org:8448"},
		"matrix:thread:!roomid:example.org:$root":      {Platform: "matrix", Kind: platform.Thread, Chat: "!roomid:example.org", Thread: "$root"},
		"matrix:thread:!roomid:example.org:$ev:ex.org": {Platform: "matrix", Kind: platform.Thread, Chat: "!roomid:example.org", Thread: "$ev:ex.org"},
	} {
		as, err := assembleFrom(t, freePort+"gateway:\n  homes:\n    matrix: \""+written+"\"\n", matrixOn)
		if err != nil {
			t.Errorf("%s: %v", written, err)
			continue
		}
		got, err := platform.ParseKey(as.homes["matrix"])
		if err != nil || got != want {
			t.Errorf("%s became %q = %+v (%v), want %+v", written, as.homes["matrix"], got, err, want)
		}
	}
}

// A home its platform cannot read is refused at start, with the form to
// write, even for a platform not enabled.
func TestAssembleRefusesAHomeItCannotRead(t *testing.T) {
	for written, why := range map[string]string{
		"matrix:group:!roomid":              "not a room id",
		"matrix:group:#room:example.org":    "room alias",
		"matrix:room:!roomid:example.org":   "no kind of place",
		"matrix:dm:!roomid:example.org":     "no kind of Matrix place",
		"matrix:thread:!roomid:example.org": "root event",
	} {
		for _, env := range []map[string]string{matrixOn, nil} {
			_, err := assembleFrom(t, freePort+"gateway:\n  homes:\n    matrix: \""+written+"\"\n", env)
			if err == nil || !strings.Contains(err.Error(), "gateway.homes.matrix") || !strings.Contains(err.Error(), why) ||
				!strings.Contains(err.Error(), "matrix:group:!roomid:example.org") {
				t.Errorf("%s (enabled: %v): %v; want it refused, saying %q and the form to write", written, env != nil, err, why)
			}
		}
	}
}

// Every home written in the README, ARCHITECTURE and DECISIONS
// (placeholders aside) is read by its platform as exactly what is written.
func TestDocumentedHomesRead(t *testing.T) {
	specs := map[string]platform.Spec{}
	for _, s := range all.Specs() {
		specs[s.Name] = s
	}
	key := regexp.MustCompile("[`\"]([a-z]+):(dm|group|thread):[^`\" ]*[`\"]")
	n := 0
	for _, doc := range []string{"../../../README.md", "../../../docs/ARCHITECTURE.md", "../../../docs/DECISIONS.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range key.FindAllStringSubmatch(string(b), -1) {
			written := strings.Trim(m[0], "`\"")
			s, ok := specs[m[1]]
			if !ok || strings.ContainsAny(written, "<…") {
				continue
			}
			n++
			homes, err := readHomes(all.Specs(), map[string]string{s.Name: written})
			if err != nil {
				t.Errorf("%s: %s: %v", doc, written, err)
				continue
			}
			a, err := platform.ParseKey(homes[s.Name])
			if err != nil {
				t.Errorf("%s: %s became %q: %v", doc, written, homes[s.Name], err)
				continue
			}
			raw := strings.Join([]string{a.Platform, string(a.Kind), a.Chat}, ":")
			if a.Thread != "" {
				raw += ":" + a.Thread
			}
			if raw != written {
				t.Errorf("%s: %s was read as %+v", doc, written, a)
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d documented homes found; has the README's form changed?", n)
	}
}

// The mistakes people make writing a home on the other platforms (a name
// or handle where an id belongs, a platform misspelt) are refused at
// start with the form.
func TestAssembleRefusesHomesByName(t *testing.T) {
	for platformName, c := range map[string]struct{ written, why, form string }{
		"telegram": {"telegram:dm:@me", "not a chat id", "telegram:dm:123456789"},
		"slack":    {"slack:group:#general", "not a channel id", "slack:group:C0123456789"},
		"discord":  {"discord:group:general", "not a channel or thread id", "discord:group:"},
		"whatsapp": {"whatsapp:dm:+4915550000", "not a chat JID", "whatsapp:dm:4915550000@s.whatsapp.net"},
		"imessage": {"imessage:dm:+15550001111", "not a chat guid", "imessage:dm:iMessage;-;+15550001111"},
		"signal":   {"signal:+4915550000", "not an address key", "signal:dm:+4915550000"},
		"telegarm": {"telegarm:dm:42", "no platform is named", "telegram, slack"},
	} {
		_, err := assembleFrom(t, freePort+"gateway:\n  homes:\n    "+platformName+": \""+c.written+"\"\n", nil)
		if err == nil || !strings.Contains(err.Error(), "gateway.homes."+platformName) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), c.form) {
			t.Errorf("%s: %v; want it refused, saying %q and the form %q", c.written, err, c.why, c.form)
		}
	}
}

// Status shows a home as a person writes it, where that reads back as the
// same place, so it can be copied into gateway.homes.
func TestHomeAsWritten(t *testing.T) {
	for key, want := range map[string]string{
		"matrix:group:!roomid%3Aexample.org":          "matrix:group:!roomid:example.org",
		"matrix:thread:!r%3Aexample.org:$ev%3Aex.org": "matrix:thread:!r:example.org:$ev:ex.org",
		"telegram:thread:-100777:42":                  "telegram:thread:-100777:42",
		"web:thread:main:a%253Ab":                     "web:thread:main:a%253Ab",
		"nosuch:dm:a%3Ab":                             "nosuch:dm:a%3Ab",
		"":                                            "",
	} {
		if got := homeAsWritten(all.Specs(), key); got != want {
			t.Errorf("homeAsWritten(%q) = %q, want %q", key, got, want)
		}
	}
}

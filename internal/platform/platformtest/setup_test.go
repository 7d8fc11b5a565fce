package platformtest_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform/platformtest"
)

type section struct {
	Token string `yaml:"token"`
	URL   string `yaml:"url"`
}

func TestSetupDecodesTheSectionAsConfigDoes(t *testing.T) {
	s := platformtest.Setup(t, "chat", "token: t1\nurl: http://127.0.0.1:1\n", map[string]string{"CHAT_TOKEN": "env"})
	var sec section
	if err := s.DecodeSection(&sec); err != nil || sec.Token != "t1" || sec.URL != "http://127.0.0.1:1" {
		t.Fatalf("decoded %+v, %v", sec, err)
	}
	if !s.Present || s.Env("CHAT_TOKEN") != "env" || s.Env("OTHER") != "" {
		t.Errorf("present %v, env %q/%q", s.Present, s.Env("CHAT_TOKEN"), s.Env("OTHER"))
	}
	if err := platformtest.Setup(t, "chat", "tokn: x\n", nil).DecodeSection(&sec); err == nil || !strings.Contains(err.Error(), "tokn") {
		t.Errorf("an unknown field accepted: %v", err)
	}
	none := platformtest.Setup(t, "chat", "", nil)
	sec = section{Token: "kept"}
	if err := none.DecodeSection(&sec); err != nil || sec.Token != "kept" || none.Present {
		t.Errorf("no section: %+v, %v, present %v", sec, err, none.Present)
	}
}

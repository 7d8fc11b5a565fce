package slack

import (
	"go/ast"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
)

// apiCalls is every slack-go method the adapter calls, with the Web API
// method it makes.
var apiCalls = map[string]string{
	"AuthTestContext":                  "auth.test",
	"StartSocketModeContext":           "apps.connections.open",
	"PostMessageContext":               "chat.postMessage",
	"UpdateMessageContext":             "chat.update",
	"GetConversationHistoryContext":    "conversations.history",
	"GetConversationRepliesContext":    "conversations.replies",
	"SetAssistantThreadsStatusContext": "assistant.threads.setStatus",
	"GetUploadURLExternalContext":      "files.getUploadURLExternal",
	"UploadToURL":                      "", // not a method: the upload URL files.getUploadURLExternal gave
	"CompleteUploadExternalContext":    "files.completeUploadExternal",
}

func TestEveryMethodCalledIsInTheWebAPI(t *testing.T) {
	api := slacktest.Spec(t)
	called := apispec.Calls(t, ".", func(call *ast.CallExpr) (string, bool) {
		return strings.CutPrefix(apispec.Selector(call), "a.api.")
	})
	for _, c := range called {
		name, listed := apiCalls[c]
		if !listed {
			t.Errorf("the adapter calls a.api.%s, not listed in apiCalls with its Web API method", c)
			continue
		}
		if name == "" {
			t.Logf("%-28s not a Web API method (a.api.%s)", "-", c)
			continue
		}
		m, ok := api.Method(name)
		switch {
		case !ok:
			t.Errorf("the adapter calls %s (a.api.%s), which Slack's Web API does not have", name, c)
		case m.BeyondSpec != "":
			t.Logf("%-28s not in the published description: %s (%s)", name, m.BeyondSpec, m.Doc)
		default:
			t.Logf("%-28s %s", name, m.Doc)
		}
	}
	for c := range apiCalls {
		if !strings.Contains(" "+strings.Join(called, " ")+" ", " "+c+" ") {
			t.Errorf("apiCalls lists a.api.%s, which the adapter no longer calls", c)
		}
	}
}

// The methods the adapter calls itself (a.rawCall), where slack-go does
// not read all of the answer, are in the Web API too.
func TestEveryRawCallIsInTheWebAPI(t *testing.T) {
	api := slacktest.Spec(t)
	called := apispec.Calls(t, ".", func(call *ast.CallExpr) (string, bool) {
		if apispec.Selector(call) != "a.rawCall" {
			return "", false
		}
		return apispec.StringArg(call, 1)
	})
	if len(called) == 0 {
		t.Fatal("no a.rawCall found")
	}
	for _, name := range called {
		if m, ok := api.Method(name); !ok {
			t.Errorf("the adapter calls %s, which Slack's Web API does not have", name)
		} else {
			t.Logf("%-28s %s", name, m.Doc)
		}
	}
}

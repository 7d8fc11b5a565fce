package telegram

import (
	"go/ast"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
)

// apiCalls is every Bot API method the adapter calls, with its entry in
// Telegram's description of the Bot API.
var apiCalls = map[string]string{
	"getMe":            "https://core.telegram.org/bots/api#getme",
	"getUpdates":       "https://core.telegram.org/bots/api#getupdates",
	"sendMessage":      "https://core.telegram.org/bots/api#sendmessage",
	"editMessageText":  "https://core.telegram.org/bots/api#editmessagetext",
	"sendChatAction":   "https://core.telegram.org/bots/api#sendchataction",
	"createForumTopic": "https://core.telegram.org/bots/api#createforumtopic",
	"setMyCommands":    "https://core.telegram.org/bots/api#setmycommands",
	"getFile":          "https://core.telegram.org/bots/api#getfile",
}

// calledMethods finds the Bot API methods in the adapter's source: the
// client library's methods on a.api (SendMessage is sendMessage) and the
// methods rawCall names.
func calledMethods(t *testing.T) []string {
	return apispec.Calls(t, ".", func(call *ast.CallExpr) (string, bool) {
		sel := apispec.Selector(call)
		if m, ok := strings.CutPrefix(sel, "a.api."); ok {
			return strings.ToLower(m[:1]) + m[1:], true
		}
		if sel == "a.rawCall" {
			if m, ok := apispec.StringArg(call, 1); ok {
				return m, true
			}
			return "rawCall with a method that is not a literal", true
		}
		return "", false
	})
}

func TestEveryMethodCalledIsInTheBotAPI(t *testing.T) {
	api := telegramtest.Spec(t)
	called := calledMethods(t)
	for _, m := range called {
		href, listed := apiCalls[m]
		if !listed {
			t.Errorf("the adapter calls %s, not listed in apiCalls with its Bot API entry", m)
			continue
		}
		spec, ok := api.Method(m)
		switch {
		case !ok:
			t.Errorf("the adapter calls %s, which %s does not have", m, api.Version)
		case spec.Href != href:
			t.Errorf("%s: listed as %s, the description says %s", m, href, spec.Href)
		default:
			t.Logf("%-16s %s", m, href)
		}
	}
	for m := range apiCalls {
		if !strings.Contains(" "+strings.Join(called, " ")+" ", " "+m+" ") {
			t.Errorf("apiCalls lists %s, which the adapter no longer calls", m)
		}
	}
}

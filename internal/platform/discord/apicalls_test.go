package discord

import (
	"go/ast"
	"regexp"
	"strings"
	"testing"

	"github.com/disgoorg/disgo/rest"

	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// apiCalls is every REST endpoint of disgo's the adapter calls, with the
// route Discord's OpenAPI description has for it.
var apiCalls = map[string]struct {
	endpoint *rest.Endpoint
	route    string // method and path as the description writes it
}{
	"GetGatewayBot": {rest.GetGatewayBot, "GET /gateway/bot"},
	"GetChannel":    {rest.GetChannel, "GET /channels/{channel_id}"},
	"GetMessages":   {rest.GetMessages, "GET /channels/{channel_id}/messages"},
	"CreateMessage": {rest.CreateMessage, "POST /channels/{channel_id}/messages"},
	"UpdateMessage": {rest.UpdateMessage, "PATCH /channels/{channel_id}/messages/{message_id}"},
	"SendTyping":    {rest.SendTyping, "POST /channels/{channel_id}/typing"},
	"CreateThread":  {rest.CreateThread, "POST /channels/{channel_id}/threads"},
}

func TestEveryRouteCalledIsInTheOpenAPI(t *testing.T) {
	api := discordtest.Spec(t)
	// The adapter reaches Discord's REST API through rest.<Endpoint>.Compile.
	called := apispec.Calls(t, ".", func(call *ast.CallExpr) (string, bool) {
		sel := apispec.Selector(call)
		if ep, ok := strings.CutPrefix(sel, "rest."); ok && strings.HasSuffix(ep, ".Compile") {
			return strings.TrimSuffix(ep, ".Compile"), true
		}
		return "", false
	})
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, c := range called {
		e, listed := apiCalls[c]
		if !listed {
			t.Errorf("the adapter calls rest.%s, not listed in apiCalls with its route", c)
			continue
		}
		// Where disgo sends it: its route with every parameter an id.
		op, _ := api.Find(e.endpoint.Method, param.ReplaceAllString(e.endpoint.Route, "1"))
		if op == nil {
			t.Errorf("rest.%s (%s %s) is not in Discord's OpenAPI description", c, e.endpoint.Method, e.endpoint.Route)
			continue
		}
		if got := op.Method + " " + op.Path; got != e.route {
			t.Errorf("rest.%s is %s in the description, listed as %s", c, got, e.route)
			continue
		}
		t.Logf("rest.%-14s %-52s %s", c, e.route, op.ID)
	}
	for c := range apiCalls {
		if !strings.Contains(" "+strings.Join(called, " ")+" ", " "+c+" ") {
			t.Errorf("apiCalls lists rest.%s, which the adapter no longer calls", c)
		}
	}
}

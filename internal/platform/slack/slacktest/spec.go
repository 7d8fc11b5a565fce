package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit"
	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// WebAPI is Slack's published description of its Web API
// (../shared/specs/slack-web-openapi-v2.json, Swagger 2.0): each method's
// parameters, their types and which are required. The fake checks every
// Web API request against it when it is there.
type WebAPI struct {
	methods map[string]WebMethod
}

// WebMethod is one Web API method.
type WebMethod struct {
	Name   string
	Doc    string // its page on api.slack.com
	Params []Param
	// BeyondSpec says why the method is checked against parameters
	// written here rather than the description (see beyondSpec).
	BeyondSpec string
}

// Param is a method's parameter.
type Param struct {
	Name     string
	Type     string // string, boolean, integer, number
	Required bool
}

// beyondSpec is the methods baton calls that Slack's published
// description (written before them) lacks, with their parameters as
// their pages on api.slack.com give them. They are real methods; the fake
// checks them against these instead.
var beyondSpec = map[string]WebMethod{
	"apps.connections.open": {
		Doc:        "https://api.slack.com/methods/apps.connections.open",
		BeyondSpec: "Socket Mode came after the published description; its method takes the app-level token alone",
	},
	"files.getUploadURLExternal": {
		Doc: "https://api.slack.com/methods/files.getUploadURLExternal",
		Params: []Param{
			{Name: "filename", Type: "string", Required: true},
			{Name: "length", Type: "integer", Required: true},
			{Name: "alt_txt", Type: "string"},
			{Name: "snippet_type", Type: "string"},
		},
		BeyondSpec: "the external upload flow came after the published description",
	},
	"files.completeUploadExternal": {
		Doc: "https://api.slack.com/methods/files.completeUploadExternal",
		Params: []Param{
			{Name: "files", Type: "string", Required: true}, // a JSON array of {id, title}
			{Name: "channel_id", Type: "string"},
			{Name: "channels", Type: "string"},
			{Name: "initial_comment", Type: "string"},
			{Name: "thread_ts", Type: "string"},
			{Name: "blocks", Type: "string"},
		},
		BeyondSpec: "the external upload flow came after the published description",
	},
	"assistant.threads.setStatus": {
		Doc: "https://api.slack.com/methods/assistant.threads.setStatus",
		Params: []Param{
			{Name: "channel_id", Type: "string", Required: true},
			{Name: "thread_ts", Type: "string", Required: true},
			{Name: "status", Type: "string", Required: true},
			{Name: "loading_messages", Type: "string"},
			{Name: "icon_emoji", Type: "string"},
			{Name: "icon_url", Type: "string"},
			{Name: "username", Type: "string"},
		},
		BeyondSpec: "AI assistant threads came after the published description",
	},
}

// laterParams is parameters Slack added to described methods after the
// description was written, which baton's client library (slack-go)
// always sends: the adapter cannot leave them out, and Slack takes them.
var laterParams = map[string][]Param{
	// https://api.slack.com/methods/conversations.history#arg_include_all_metadata
	"conversations.history": {{Name: "include_all_metadata", Type: "boolean"}},
	// https://api.slack.com/methods/conversations.replies#arg_include_all_metadata
	"conversations.replies": {{Name: "include_all_metadata", Type: "boolean"}},
	// https://api.slack.com/methods/chat.postMessage#arg_metadata: a JSON
	// object, event_type and event_payload (api.slack.com/reference/metadata).
	"chat.postMessage": {{Name: "metadata", Type: "string"}},
}

// loadWebAPI reads the description once per test binary: it is large,
// never changes while tests run, and every fake checks against it.
var loadWebAPI = sync.OnceValues(func() (*WebAPI, error) {
	p, ok := apispec.Path(apispec.Slack)
	if !ok {
		return nil, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("slacktest: %w", err)
	}
	var raw struct {
		Paths map[string]map[string]struct {
			ExternalDocs struct {
				URL string `json:"url"`
			} `json:"externalDocs"`
			Parameters []struct {
				Name     string `json:"name"`
				In       string `json:"in"`
				Type     string `json:"type"`
				Required bool   `json:"required"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("slacktest: %s: %w", p, err)
	}
	api := &WebAPI{methods: map[string]WebMethod{}}
	for path, ops := range raw.Paths {
		name := strings.TrimPrefix(path, "/")
		for _, op := range ops { // one operation a method; its verb does not matter (below)
			m := WebMethod{Name: name, Doc: op.ExternalDocs.URL}
			for _, p := range op.Parameters {
				if p.Name == "token" {
					continue // the fake checks the token itself, from either place
				}
				m.Params = append(m.Params, Param{Name: p.Name, Type: p.Type, Required: p.Required})
			}
			m.Params = append(m.Params, laterParams[name]...)
			api.methods[name] = m
		}
	}
	for name, m := range beyondSpec {
		if _, ok := api.methods[name]; ok {
			return nil, fmt.Errorf("slacktest: %s is in the description now: drop it from beyondSpec", name)
		}
		m.Name = name
		api.methods[name] = m
	}
	return api, nil
})

// Spec is the Web API description; the test is skipped without it (it
// fails under CI=true, where it must be there).
func Spec(tb testing.TB) *WebAPI {
	tb.Helper()
	apispec.Require(tb, apispec.Slack)
	api, err := loadWebAPI()
	if err != nil || api == nil {
		tb.Fatalf("slacktest: Web API description: %v", err)
	}
	return api
}

// Method is the method named, if Slack has it.
func (a *WebAPI) Method(name string) (WebMethod, bool) {
	m, ok := a.methods[name]
	return m, ok
}

// check is the refusal Slack would give a Web API call, or nil. The HTTP
// verb is not checked: Slack takes GET and POST for every method, whatever
// the description lists. A parameter the description lacks is refused
// too, though Slack ignores it: a misspelt one would otherwise go unseen.
func (a *WebAPI) check(method string, params map[string]string) *fakekit.Refusal {
	m, ok := a.methods[method]
	if !ok {
		return &fakekit.Refusal{Unknown: true, Reason: "unknown_method"}
	}
	known := map[string]bool{"token": true}
	for _, p := range m.Params {
		known[p.Name] = true
		v, present := params[p.Name]
		if !present || v == "" {
			if p.Required {
				return &fakekit.Refusal{Field: p.Name, Reason: "missing required field: " + p.Name}
			}
			continue
		}
		if !fits(p.Type, v) {
			return &fakekit.Refusal{Field: p.Name, Reason: "invalid type for field: " + p.Name + " (want " + p.Type + ")"}
		}
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !known[k] {
			return &fakekit.Refusal{Field: k, Reason: "unknown field: " + k + " (not a parameter of " + method + ")"}
		}
	}
	return nil
}

func fits(typ, v string) bool {
	switch typ {
	case "boolean":
		return v == "true" || v == "false" || v == "1" || v == "0"
	case "integer":
		_, err := strconv.ParseInt(v, 10, 64)
		return err == nil
	case "number":
		_, err := strconv.ParseFloat(v, 64)
		return err == nil
	}
	return true
}

// specCheck is the kit's Config.Spec. The Socket Mode websocket
// ("socket", at the URL apps.connections.open hands out), the file host's
// downloads and the upload URLs are fake-only here and not Web API
// methods: they are not checked.
func specCheck(api *WebAPI) func(*http.Request, string, map[string]string) *fakekit.Refusal {
	return func(_ *http.Request, method string, params map[string]string) *fakekit.Refusal {
		if method == "socket" || method == RouteDownload || method == RouteUpload {
			return nil
		}
		return api.check(method, params)
	}
}

// writeRefusal answers as Slack does: HTTP 200, ok:false, unknown_method
// or invalid_arguments with the reason in response_metadata.messages.
func writeRefusal(w http.ResponseWriter, _ *http.Request, ref fakekit.Refusal) {
	if ref.Unknown {
		fail(w, "unknown_method")
		return
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{
		"ok": false, "error": "invalid_arguments",
		"response_metadata": map[string]any{"messages": []string{"[ERROR] " + ref.Reason}},
	})
}
